package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWorkers(t *testing.T) {
	w := NewWorkers(2)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Do(context.Background(), func() { <-release })
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for (w.Busy() != 2 || w.Queued() != 1) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if w.Busy() != 2 || w.Queued() != 1 {
		t.Fatalf("got busy %d, queued %d, want 2 and 1", w.Busy(), w.Queued())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	ran := false
	if _, err := w.Do(ctx, func() { ran = true }); err == nil || ran {
		t.Errorf("a job whose context ends in the queue: got err %v, ran %v, want an error and no run", err, ran)
	}
	close(release)
	wg.Wait()
	if w.Busy() != 0 || w.Queued() != 0 {
		t.Errorf("after: got busy %d, queued %d, want 0 and 0", w.Busy(), w.Queued())
	}
}

func TestDownstreamPause(t *testing.T) {
	d, err := NewDownstream(1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const pause = 150 * time.Millisecond
	start := time.Now()
	d.PauseUntil(start.Add(pause))
	var wg sync.WaitGroup
	ends := make([]time.Duration, 3)
	for i := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(d.URL + "/delay?delay=20ms")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			ends[i] = time.Since(start)
		}()
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	if got := d.Peak(); got != 3 {
		t.Errorf("peak: got %d, want 3 (all held by the pause)", got)
	}
	// One slot: the three are served one after the other from the end of the pause.
	var last time.Duration
	for _, e := range ends {
		last = max(last, e)
	}
	if want := pause + 60*time.Millisecond; last < want || last > want+200*time.Millisecond {
		t.Errorf("last answer at %v, want %v (margin 200 ms)", last, want)
	}
	if opened, _ := d.Conns(); opened != 3 {
		t.Errorf("got %d connections, want 3", opened)
	}
	if got := len(d.Fake().Requests()); got != 3 {
		t.Errorf("the fake server logged %d requests, want 3", got)
	}
}

func TestHedge(t *testing.T) {
	const delay = 30 * time.Millisecond
	fail := errors.New("failed")
	tests := []struct {
		name     string
		take     []time.Duration // per copy
		fails    []bool
		wantCopy int
		wantSent int
		wantErr  bool
	}{
		{"fast: no copy", []time.Duration{0, 0}, []bool{false, false}, 0, 1, false},
		{"slow: the copy wins", []time.Duration{time.Second, 0}, []bool{false, false}, 1, 2, false},
		{"first fails: the copy goes at once", []time.Duration{0, 0}, []bool{true, false}, 1, 2, false},
		{"both fail", []time.Duration{0, 0}, []bool{true, true}, 0, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got, sent, err := Hedge(context.Background(), delay, func(ctx context.Context, copy int) (int, error) {
				select {
				case <-time.After(tt.take[copy]):
				case <-ctx.Done():
					return 0, ctx.Err()
				}
				if tt.fails[copy] {
					return 0, fail
				}
				return copy, nil
			})
			if (err != nil) != tt.wantErr || sent != tt.wantSent || (err == nil && got != tt.wantCopy) {
				t.Errorf("got copy %d, %d sent, err %v; want copy %d, %d sent, error %v", got, sent, err, tt.wantCopy, tt.wantSent, tt.wantErr)
			}
			if tt.name == "first fails: the copy goes at once" && time.Since(start) >= delay {
				t.Errorf("the copy waited for the delay after the first failed: %v", time.Since(start))
			}
		})
	}
}

func TestDownstreamTail(t *testing.T) {
	d, err := NewDownstream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Every 2nd call's first request is slow, up to call 3: calls 0 and 2; call 4 is past it.
	d.SetTail(Tail{Every: 2, Slow: 150 * time.Millisecond, Calls: 3})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	took := func(call string) time.Duration {
		start := time.Now()
		resp, err := c.Get(d.URL + "/delay?call=" + call)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return time.Since(start)
	}
	for _, tt := range []struct {
		call string
		slow bool
	}{{"0", true}, {"0", false}, {"1", false}, {"2", true}, {"4", false}, {"x", false}} {
		if got := took(tt.call) >= 150*time.Millisecond; got != tt.slow {
			t.Errorf("call %s: slow %v, want %v", tt.call, got, tt.slow)
		}
	}
	if !d.Reached("2") || d.Reached("3") {
		t.Errorf("Reached: got 2 %v, 3 %v; want true, false", d.Reached("2"), d.Reached("3"))
	}
	if got := d.Arrived(); got != 6 {
		t.Errorf("arrived: got %d, want 6", got)
	}
}

// TestDownstreamPeakEndsWithTheAnswer: a request leaves the count when its answer is complete,
// not when its handler returns. A client that closes each connection and opens the next one
// for its next request (as a pool over its idle limit does) is never counted twice: calls one
// after the other make a peak of one. A count kept until the handler returned saw two now and
// then, and the cascade's pool of 5 read as 6.
func TestDownstreamPeakEndsWithTheAnswer(t *testing.T) {
	d, err := NewDownstream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	d.ResetCounts()
	for _, path := range []string{"/delay?delay=0s", "/status/204", "/delay?delay=0s&body=64"} {
		for range 100 {
			resp, err := c.Get(d.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if got := d.Peak(); got != 1 {
		t.Errorf("peak of calls made one after the other: got %d, want 1", got)
	}
	if got := d.Arrived(); got != 300 {
		t.Errorf("arrived: got %d, want 300", got)
	}
}
