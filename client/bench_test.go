package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkOverhead measures the per-call cost of labrun's client against a plain net/http
// client on a keep-alive loopback GET, alternating the two so that both see the same machine
// noise, and reports their ratio as "x-plain" (target: at most 1.15).
func BenchmarkOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	// Both clients bound the whole call (Client.Timeout, Config.Deadline): a fair comparison.
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer plain.CloseIdleConnections()
	c, err := New(Config{MaxPerRoute: 1, MaxTotal: 1, ReadTimeout: time.Second, LeaseTimeout: time.Second, Deadline: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	ctx := context.Background()

	plainCall := func() {
		resp, err := plain.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	labrunCall := func() {
		if _, err := c.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	plainCall()
	labrunCall()
	var tPlain, tLabrun time.Duration
	for b.Loop() {
		t0 := time.Now()
		plainCall()
		t1 := time.Now()
		labrunCall()
		tPlain += t1.Sub(t0)
		tLabrun += time.Since(t1)
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/call")
	b.ReportMetric(float64(tLabrun.Nanoseconds())/float64(b.N), "labrun-ns/call")
	b.ReportMetric(float64(tLabrun)/float64(tPlain), "x-plain")
}
