package fakesrv

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/dist"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/testenv"
)

// outcome is what a client saw of one request.
type outcome struct {
	status  int
	err     error
	elapsed time.Duration // to the response head
}

// fire sends n GETs of path from clients clients at once, each with its own connections and
// timeout, and returns what each request saw, in no particular order.
func fire(t *testing.T, s *Server, path string, n, clients int, timeout time.Duration) []outcome {
	t.Helper()
	var mu sync.Mutex
	var out []outcome
	var wg sync.WaitGroup
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range clients {
		tr := &http.Transport{MaxIdleConnsPerHost: 4}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: timeout}
		for range 4 {
			wg.Go(func() {
				for range jobs {
					start := time.Now()
					resp, err := c.Get(s.URL + path)
					o := outcome{err: err, elapsed: time.Since(start)}
					if err == nil {
						o.status = resp.StatusCode
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					mu.Lock()
					out = append(out, o)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return out
}

// TestSeededFailuresKnownInAdvance: seed=7 fail-rate=0.1 over 1,000 requests from two
// clients at once fails exactly the numbers dist.Failing printed before, on two runs.
func TestSeededFailuresKnownInAdvance(t *testing.T) {
	s := newServer(t, WithPreciseTiming(false))
	want := dist.Failing(7, 0.1, 1000)
	path := Behaviour{FailRate: 0.1, Seed: 7}.Path()
	for run := 1; run <= 2; run++ {
		s.Reset()
		got := fire(t, s, path, 1000, 2, 10*time.Second)
		failed := 0
		for _, o := range got {
			if o.err != nil {
				t.Fatalf("run %d: %v", run, o.err)
			}
			if o.status == http.StatusServiceUnavailable {
				failed++
			}
		}
		st := s.Stats().Seeds["7"]
		if st.Requests != 1000 || st.Failed != len(want) || !slices.Equal(st.FailedNumbers, want) {
			t.Errorf("run %d: /stats seed 7: %d requests, %d failed %v; want 1000, %d failed %v", run, st.Requests, st.Failed, st.FailedNumbers, len(want), want)
		}
		if failed != len(want) {
			t.Errorf("run %d: the clients saw %d 503s, want %d", run, failed, len(want))
		}
		var logged []int
		for _, r := range s.Requests() {
			if r.Failed != "" {
				logged = append(logged, r.SeedNo)
			}
		}
		slices.Sort(logged)
		if !slices.Equal(logged, want) {
			t.Errorf("run %d: the log's failed numbers %v, want %v", run, logged, want)
		}
	}
}

// TestSeededFailKinds: each kind fails the predicted numbers the way it says.
func TestSeededFailKinds(t *testing.T) {
	want := dist.Failing(3, 0.3, 20)
	for _, kind := range []string{FailClose, FailReset, FailStall, "429"} {
		t.Run(kind, func(t *testing.T) {
			s := newServer(t, WithPreciseTiming(false))
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 300 * time.Millisecond}
			path := Behaviour{FailRate: 0.3, Seed: 3, Fail: kind, MaxStall: 5 * time.Second}.Path()
			var failing []int
			for n := 1; n <= 20; n++ {
				resp, err := c.Get(s.URL + path)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					failing = append(failing, n)
				}
				if kind == "429" && err == nil && resp.StatusCode != 200 && resp.StatusCode != 429 {
					t.Errorf("request %d: status %d", n, resp.StatusCode)
				}
				var ue *url.Error
				if kind == FailStall && err != nil && !(errors.As(err, &ue) && ue.Timeout()) {
					t.Errorf("request %d: %v, want the client's timeout", n, err)
				}
			}
			if !slices.Equal(failing, want) {
				t.Errorf("failed %v, want %v", failing, want)
			}
		})
	}
}

// TestSeededDelays: a lognormal's draws reach the client as the delays dist.Draw gives, so
// a read timeout fires on the requests predicted; fast delays keep it short.
func TestSeededDelays(t *testing.T) {
	testenv.Timing(t)
	d, _ := dist.Parse("lognormal:20ms:0.4")
	timeout := 40 * time.Millisecond
	const n = 400
	over, near := 0, 0
	for i := uint64(1); i <= n; i++ {
		v := d.Draw(9, i)
		if v > timeout {
			over++
		}
		if (v - timeout).Abs() < 5*time.Millisecond {
			near++ // a draw this close may fall either side under the machine's noise
		}
	}
	s := newServer(t, WithPreciseTiming(false))
	got := fire(t, s, "/delay?delay-dist=lognormal:20ms:0.4&seed=9", n, 2, timeout)
	timedOut := 0
	for _, o := range got {
		if o.err != nil {
			timedOut++
		}
	}
	if math.Abs(float64(timedOut-over)) > float64(near) {
		t.Errorf("%d of %d timed out at %v, want %d (+-%d drawn within 5ms of it)", timedOut, n, timeout, over, near)
	}
	for _, r := range s.Requests() {
		if want := d.Draw(9, uint64(r.SeedNo)); r.Drawn != want {
			t.Errorf("request %d of seed 9: drew %v, want %v", r.SeedNo, r.Drawn, want)
		}
	}
}

// TestSeededLogNormalAcceptance is the figure: lognormal median 80 ms, sigma 0.4
// over 2,000 requests, measured by clients: p50 and p99 within the order statistics' band of
// the model's 80 ms and 203 ms (3 sigma of ranks, plus 10 ms of the machine's lateness); a
// 150 ms timeout fires on the share the model's tail question gives (5.8%) within its
// binomial band (3 sigma), and on the requests the seed drew beyond it (give or take those
// drawn within the lateness of it).
func TestSeededLogNormalAcceptance(t *testing.T) {
	testenv.Slow(t, "4,000 requests of 80 ms")
	testenv.Timing(t)
	d, _ := dist.Parse("lognormal:80ms:0.4")
	s := newServer(t, WithPreciseTiming(false))
	const n = 2000
	path := "/delay?delay-dist=lognormal:80ms:0.4&seed=11"
	got := fire(t, s, path, n, 10, 10*time.Second)
	var times []time.Duration
	for _, o := range got {
		if o.err != nil || o.status != 200 {
			t.Fatalf("%v %d", o.err, o.status)
		}
		times = append(times, o.elapsed)
	}
	slices.Sort(times)
	const lateness = 10 * time.Millisecond
	for _, p := range []float64{0.5, 0.99} {
		band := 3 * math.Sqrt(n*p*(1-p)) / n
		lo, hi := d.Quantile(p-band), d.Quantile(p+band)+lateness
		if m := times[int(p*n)-1]; m < lo || m > hi {
			t.Errorf("measured p%v %v, want %v to %v (model %v)", p*100, m, lo, hi, d.Quantile(p))
		} else {
			t.Logf("measured p%v %v, band %v to %v (model %v)", p*100, m, lo, hi, d.Quantile(p))
		}
	}

	s.Reset()
	timeout := 150 * time.Millisecond
	got = fire(t, s, path, n, 10, timeout)
	timedOut := 0
	for _, o := range got {
		if o.err != nil {
			timedOut++
		}
	}
	share := model.TailQuestion{Dist: d, Timeout: timeout}.Answer().TimedOut
	// This seed's own draws beyond the timeout by more than the lateness, which must time
	// out, and within the lateness either side of it, which may (the server late, or the
	// client's timer).
	drawn, near := 0, 0
	for i := uint64(1); i <= n; i++ {
		switch v := d.Draw(11, i); {
		case v > timeout+lateness:
			drawn++
		case v > timeout-lateness:
			near++
		}
	}
	t.Logf("seed 11 draws %d of %d beyond %v, %d within %v of %v", drawn, n, timeout+lateness, near, lateness, timeout)
	if timedOut < drawn || timedOut > drawn+near {
		t.Errorf("%d timed out, want the %d drawn beyond %v and at most the %d drawn within %v of %v", timedOut, drawn, timeout+lateness, near, lateness, timeout)
	}
	sigma := math.Sqrt(n * share * (1 - share))
	if math.Abs(float64(timedOut)-n*share) > 3*sigma {
		t.Errorf("%d of %d timed out at %v, want %.0f +- %.0f (%.1f%%)", timedOut, n, timeout, n*share, 3*sigma, 100*share)
	} else {
		t.Logf("%d of %d timed out at %v, model %.0f +- %.0f (%.1f%%)", timedOut, n, timeout, n*share, 3*sigma, 100*share)
	}
}

// TestBandwidth: a cap is never exceeded: 6,000 bytes at 20,000 B/s come in pieces, never
// ahead of 20 bytes a millisecond since the head (plus 5 ms of the client's own delay in
// seeing the head), and whole no sooner than 300 ms. Lateness is the machine's, not the
// cap's: the upper bound (1 s) only catches a rate gone wrong.
func TestBandwidth(t *testing.T) {
	testenv.Timing(t)
	s := newServer(t, WithPreciseTiming(false))
	c, _ := newClient(t)
	resp, err := c.Get(s.URL + "/delay?bytes=6000&bandwidth=20000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := time.Now()
	buf := make([]byte, 6000)
	got, reads := 0, 0
	for {
		k, err := resp.Body.Read(buf)
		got += k
		reads++
		if ahead := got - int(20*time.Since(head).Milliseconds()); ahead > 100 {
			t.Fatalf("%d bytes %v after the head: %d ahead of 20,000 B/s", got, time.Since(head), ahead)
		}
		if err != nil {
			break
		}
	}
	took := time.Since(head)
	if got != 6000 || reads < 10 || took < 295*time.Millisecond || took > time.Second {
		t.Errorf("%d bytes in %d reads, whole at %v; want 6000 in pieces, at 300 ms or a little later", got, reads, took)
	}
}

func TestSeededParseRefuses(t *testing.T) {
	for _, q := range []string{"fail-rate=2", "fail-rate=-0.1", "fail-rate=x", "fail-rate=0.1&seed=-1", "fail-rate=0.1&seed=1.5",
		"seed=7", "fail-rate=0.1&fail-on=2", "delay-dist=lognormal:80ms", "delay-dist=normal:1s", "delay=1s&delay-dist=fixed:1s",
		"fail-rate=0.1&seed=1073741825", "fail-rate=0&fail-on=1", "fail=100", "fail=600", "fail=0503", "bandwidth=0", "bandwidth=2000000000", "bandwidth=10&every=1ms"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseBehaviour("/delay", v); err == nil {
			t.Errorf("%s: accepted", q)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: a multi-line error %q", q, err)
		}
	}
	for q, want := range map[string]Behaviour{
		"fail-rate=0&fail=reset&seed=3": {},
		"fail=reset":                    {Fail: FailReset},
		"fail-rate=0.5":                 {FailRate: 0.5, Fail: DefaultSeededFail, Seed: dist.DefaultSeed},
	} {
		v, _ := url.ParseQuery(q)
		if got, err := ParseBehaviour("/delay", v); err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", q, got, err, want)
		}
	}
	b := Behaviour{FailRate: 0.25, Seed: 0, DelayDist: "uniform:1ms:2ms", Bandwidth: 100}
	v, _ := url.ParseQuery(strings.SplitN(b.Path(), "?", 2)[1])
	got, err := ParseBehaviour("/delay", v)
	b.Fail = DefaultSeededFail
	if err != nil || got != b {
		t.Errorf("round trip of %s: %+v, %v", b.Path(), got, err)
	}
}

// TestSeedTableBounded: a seed beyond the table's bound is refused with 507 and counted.
func TestSeedTableBounded(t *testing.T) {
	s := newServer(t)
	for i := range MaxSeeds {
		s.seeds.next(uint64(i), 0.5)
	}
	c, _ := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/delay?fail-rate=0.5&seed=99999", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || s.Stats().Dropped.Seeds != 1 {
		t.Errorf("got %d, dropped.seeds %d; want 507 and 1", resp.StatusCode, s.Stats().Dropped.Seeds)
	}
}

// TestBandwidthReservation: a reservation's answer is paced too.
func TestBandwidthReservation(t *testing.T) {
	testenv.Timing(t)
	s := newServer(t, WithPreciseTiming(false))
	c, _ := newClient(t)
	start := time.Now()
	resp, body := mustGet(t, c, s, Behaviour{Order: "42", Bandwidth: 100})
	if took := time.Since(start); resp.StatusCode != 200 || body != "reserved order=42\n" || took < 170*time.Millisecond || took > 300*time.Millisecond {
		t.Errorf("got %d %q after %v, want 200, the reservation, at 100 B/s: about 180 ms", resp.StatusCode, body, took)
	}
}

// TestSeededOverHTTP2: over h2c the same numbers fail, a reset as a stream reset, on one
// connection that carries on.
func TestSeededOverHTTP2(t *testing.T) {
	s := newServer(t, WithProtocol(H2C))
	c := newProtoClient(t, s)
	want := dist.Failing(4, 0.25, 40)
	var failing []int
	for n := 1; n <= 40; n++ {
		req, _ := http.NewRequest("POST", s.URL+"/delay?fail-rate=0.25&seed=4&fail=reset", strings.NewReader("x"))
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else {
			failing = append(failing, n)
		}
	}
	if !slices.Equal(failing, want) {
		t.Errorf("failed %v, want %v", failing, want)
	}
	if got := s.Stats().ConnectionsAccepted; got != 1 {
		t.Errorf("%d connections, want 1: a stream reset leaves the connection", got)
	}
}
