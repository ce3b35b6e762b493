package h2

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv/h2node"
)

var h2Anomaly = flag.Bool("h2.anomaly", false, "run the net/http HTTP/2 matrix of docs/http2.md (about a minute) and log its figures")

// h2Run is what one burst of net/http HTTP/2 calls did.
type h2Run struct {
	dials, conns, used, failed int
	firstWave                  int            // calls that ended before 300 ms (the first 200 ms wave)
	waves                      map[int]int    // calls that succeeded, by end rounded to 100 ms
	errs                       map[string]int // failure messages, the URL cut off
}

func (r h2Run) String() string {
	var ks []int
	for k := range r.waves {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var w []string
	for _, k := range ks {
		w = append(w, fmt.Sprintf("%d ms: %d", k, r.waves[k]))
	}
	var e []string
	for msg, n := range r.errs {
		e = append(e, fmt.Sprintf("%dx %s", n, msg))
	}
	return fmt.Sprintf("dials %d, node connections %d (%d carried streams), failed %d, first wave %d, waves [%s] %s",
		r.dials, r.conns, r.used, r.failed, r.firstWave, strings.Join(w, ", "), strings.Join(e, "; "))
}

// goH2Run makes n calls at once with net/http against a node with a stream limit of limit
// and calls of 200 ms, after one warm-up call when warm, and reports what happened.
func goH2Run(t *testing.T, ca *h2node.CA, cfg GoConfig, limit uint32, n int, warm bool) h2Run {
	t.Helper()
	node := h2Nodes(t, 1, ca, nil, h2node.WithMaxStreams(limit), h2node.WithLatency(200*time.Millisecond))[0]
	if ca != nil {
		cfg.TLS = ca.ClientConfig()
	}
	g, err := NewGo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	get := func() error {
		resp, err := g.Client.Get(node.URL + "/")
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	if warm {
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	d0 := g.Dials()
	r := h2Run{waves: map[int]int{}, errs: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			err := get()
			end := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if end < 300*time.Millisecond {
				r.firstWave++
			}
			if err != nil {
				r.failed++
				msg := err.Error()
				if i := strings.Index(msg, "\": "); i >= 0 {
					msg = msg[i+3:]
				}
				r.errs[msg]++
				return
			}
			r.waves[int((end+50*time.Millisecond)/(100*time.Millisecond))*100]++
		})
	}
	wg.Wait()
	r.dials = g.Dials() - d0
	st := node.Stats()
	r.conns = st.Conns
	for _, s := range st.Streams {
		if s > 0 {
			r.used++
		}
	}
	return r
}

// TestH2Anomaly reproduces the prototype's figures of docs/http2.md (server limit 100, calls of
// 200 ms, Client.Timeout 5 s) against labrun's node, h2c and TLS. Run it with
//
//	go test ./client -run H2Anomaly -v -args -h2.anomaly
//
// docs/http2.md explains each effect from net/http's source.
func TestH2Anomaly(t *testing.T) {
	if !*h2Anomaly {
		t.Skip("needs -h2.anomaly")
	}
	ca, err := h2node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*h2node.CA{nil, ca} {
		proto := map[bool]string{true: "tls", false: "h2c"}[c != nil]
		for _, warm := range []bool{true, false} {
			for _, maxConns := range []int{0, 1} {
				r := goH2Run(t, c, GoConfig{Timeout: 5 * time.Second, MaxConnsPerHost: maxConns}, 100, 250, warm)
				t.Logf("%s strict=false warm=%v MaxConnsPerHost=%d n=250: %v", proto, warm, maxConns, r)
			}
		}
		for _, n := range []int{100, 150, 180, 199, 200, 201, 250} {
			r := goH2Run(t, c, GoConfig{Timeout: 5 * time.Second, StrictMaxConcurrentRequests: true}, 100, n, true)
			t.Logf("%s strict=true warm n=%d: %v", proto, n, r)
		}
	}
}

// TestGoH2StrictStall pins net/http's strict-mode stall (golang/go#70809, docs/http2.md):
// with a stream limit L, a burst of 2L+1 calls at once can never all be served, whatever the
// scheduling: every reservation of a call queued for the connection's write lock counts as a
// stream in use, so once the first wave (at most L) is done the L+ reservations left block
// the one waiting call forever. At most L calls succeed; the others time out awaiting headers.
// If this test fails, net/http changed: the docs and the "go" rows must be revisited.
func TestGoH2StrictStall(t *testing.T) {
	const limit, n = 2, 5
	r := goH2Run(t, nil, GoConfig{Timeout: 600 * time.Millisecond, StrictMaxConcurrentRequests: true}, limit, n, true)
	if r.failed < n-limit {
		t.Errorf("got %v; want at least %d of %d calls to fail", r, n-limit, n)
	}
	for msg := range r.errs {
		if !strings.Contains(msg, "awaiting headers") {
			t.Errorf("failure %q: want a Client.Timeout awaiting headers", msg)
		}
	}
	if r.conns != 1 {
		t.Errorf("node connections: got %d, want 1 (strict never dials more)", r.conns)
	}
}
