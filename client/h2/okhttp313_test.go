package h2

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"golang.org/x/net/http2"
)

// burst313 makes n GETs at once through a new pool with OkHttp 3.13's rule to a node with limit and
// latency, each through do, and returns the results and the pool's dials.
func burst313(t *testing.T, n, limit int, latency time.Duration, do func(*Pool, *http.Request) (*Result, error)) ([]*Result, int, h2node.Stats) {
	t.Helper()
	node, err := h2node.New(h2node.WithMaxStreams(uint32(limit)), h2node.WithLatency(latency))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	p, err := New(Config{Routes: []string{node.Addr}, ConnectTimeout: 2 * time.Second, CallTimeout: 10 * time.Second, Rule: rules.H2OkHttp313()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res := make([]*Result, n)
	var wg sync.WaitGroup
	gate := make(chan struct{}) // the calls start together, as threads released by a latch
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, node.URL+"/", nil)
			<-gate
			res[i], _ = do(p, req)
		})
	}
	close(gate)
	wg.Wait()
	return res, p.Dials(), node.Stats()
}

func kept(st h2node.Stats) int {
	k := 0
	for _, s := range st.Streams {
		if s > 0 {
			k++
		}
	}
	return k
}

func inSpan(n int, s model.CountSpan) bool { return n >= s.Min && n <= s.Max }

// TestOkHttp313BurstWithinModel holds a burst over the peer's limit to PredictH2Burst's
// bounds: every call dials, the calls answered are the streams the kept connections carried,
// each at most the limit, and the others failed after two REFUSED_STREAM.
func TestOkHttp313BurstWithinModel(t *testing.T) {
	const n, limit = 50, 10
	pred, err := model.PredictH2Burst(model.H2Burst{Calls: n, PeerLimit: limit, Latency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, dials, st := burst313(t, n, limit, 200*time.Millisecond, func(p *Pool, r *http.Request) (*Result, error) { return p.Do(r.Context(), r) })
	ok := 0
	for _, r := range res {
		switch {
		case r.Outcome == vocab.OK:
			ok++
		case r.Refused != 2:
			t.Errorf("a call failed with %d refusals: %v", r.Refused, r.Err)
		}
	}
	t.Logf("dials %d, kept %d, answered %d, server refused %d, streams %v", dials, kept(st), ok, st.Refused, st.Streams)
	if !inSpan(dials, pred.Dialled) || !inSpan(kept(st), pred.Kept) || !inSpan(ok, pred.Answered) {
		t.Errorf("dials %d, kept %d, answered %d; model: %+v", dials, kept(st), ok, pred)
	}
	if ok != st.Requests || st.Refused != 0 {
		t.Errorf("%d calls answered, the node answered %d streams and refused %d; want as many, none refused (the pool refuses)", ok, st.Requests, st.Refused)
	}
	for i, s := range st.MaxStreamsPerConn {
		if s > limit {
			t.Errorf("connection %d carried %d at once, over the limit %d", i+1, s, limit)
		}
	}
}

// TestOkHttp313WithinLimitOneConnection: calls no more than the limit all fit on the first
// connection pooled, whatever the SETTINGS race: each dials, one is kept, none is refused.
func TestOkHttp313WithinLimitOneConnection(t *testing.T) {
	res, dials, st := burst313(t, 5, 10, 50*time.Millisecond, func(p *Pool, r *http.Request) (*Result, error) { return p.Do(r.Context(), r) })
	for _, r := range res {
		if r.Outcome != vocab.OK {
			t.Fatalf("a call failed: %v", r.Err)
		}
	}
	if kept(st) != 1 || st.Refused != 0 || dials < 1 || dials > 5 {
		t.Fatalf("dials %d, kept %d, refused %d; want 1-5, 1, 0", dials, kept(st), st.Refused)
	}
}

// TestDispatcherFivePerHost: enqueued calls run 5 at a time on one connection.
func TestDispatcherFivePerHost(t *testing.T) {
	const latency = 100 * time.Millisecond
	var d *Dispatcher
	var once sync.Once
	start := time.Now()
	res, _, st := burst313(t, 20, 10, latency, func(p *Pool, r *http.Request) (*Result, error) {
		once.Do(func() {
			var err error
			if d, err = NewDispatcher(p, 0, 0); err != nil {
				t.Error(err)
			}
		})
		return d.Do(r.Context(), r)
	})
	took := time.Since(start)
	for _, r := range res {
		if r == nil || r.Outcome != vocab.OK {
			t.Fatalf("a call failed: %+v", r)
		}
	}
	if kept(st) != 1 || st.MaxInFlight != DefaultMaxRequestsPerHost {
		t.Errorf("kept %d, %d at once; want 1, %d", kept(st), st.MaxInFlight, DefaultMaxRequestsPerHost)
	}
	if want := 4 * latency; took < want || took > want+150*time.Millisecond {
		t.Errorf("took %v, want 4 waves of %v (+150 ms)", took, latency)
	}
	if _, err := NewDispatcher(nil, -1, 0); err == nil {
		t.Error("negative limit accepted")
	}
}

// TestH2SnifferReadsMaxStreams: the sniffer takes SETTINGS_MAX_CONCURRENT_STREAMS from the
// first frame, among other settings and read a byte at a time, and gives it only once the
// frame counts as processed; a first SETTINGS without it means no limit.
func TestH2SnifferReadsMaxStreams(t *testing.T) {
	for _, tc := range []struct {
		settings []http2.Setting
		want     int
	}{
		{[]http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 20}, {ID: http2.SettingMaxConcurrentStreams, Val: 7}, {ID: http2.SettingMaxFrameSize, Val: 1 << 15}}, 7},
		{[]http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 20}}, unknownLimit},
	} {
		server, client := net.Pipe()
		s := newH2Sniffer(client)
		go func() {
			fr := http2.NewFramer(server, nil)
			fr.WriteSettings(tc.settings...)
			fr.WritePing(false, [8]byte{})
		}()
		for range 9 + 6*len(tc.settings) {
			if _, err := s.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok := s.maxStreams(); ok {
			t.Fatal("a limit before the frame counts as processed")
		}
		if _, err := s.Read(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		if got, ok := s.maxStreams(); !ok || got != tc.want {
			t.Errorf("settings %v: limit %d (%v), want %d", tc.settings, got, ok, tc.want)
		}
		server.Close()
		s.Close()
	}
}

// TestOkHttp313HerdBeforeSettings holds the herd to its cause: against a node that sends no
// SETTINGS yet (frozen), every call that connects moves to the first connection pooled, which
// has no limit before them, so it takes all 5, beyond the node's 2. Once the node thaws, 2
// are answered there; the first call refused is refused again on the same connection and
// fails, and no call is answered twice.
func TestOkHttp313HerdBeforeSettings(t *testing.T) {
	const n, limit = 5, 2
	node, err := h2node.New(h2node.WithMaxStreams(limit), h2node.WithLatency(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	node.Freeze()
	p, err := New(Config{Routes: []string{node.Addr}, ConnectTimeout: 5 * time.Second, CallTimeout: 10 * time.Second, Rule: rules.H2OkHttp313()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res := make([]*Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, node.URL+"/", nil)
			res[i], _ = p.Do(req.Context(), req)
		})
	}
	herd := func() bool { c := p.Conns(); return len(c) > 0 && c[0].Allocated == n }
	deadline := time.Now().Add(5 * time.Second)
	for !herd() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !herd() {
		t.Fatalf("connections %+v: want the first to hold all %d calls before the SETTINGS", p.Conns(), n)
	}
	node.Thaw()
	wg.Wait()
	ok, twice := 0, 0
	for _, r := range res {
		switch {
		case r.Outcome == vocab.OK:
			ok++
		case r.Refused == 2:
			twice++
		default:
			t.Errorf("a call failed otherwise: %v", r.Err)
		}
	}
	if ok < limit || twice < 1 || ok+twice != n || ok != node.Stats().Requests {
		t.Errorf("%d answered, %d refused twice, node answered %d; want at least %d, at least 1, %d in all", ok, twice, node.Stats().Requests, limit, n)
	}
}
