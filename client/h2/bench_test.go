package h2

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv/h2node"
)

// BenchmarkH2Overhead measures the per-call cost of labrun's OkHttp-style HTTP/2 call path
// (Pool.Do: the allocation, the read timeout's timer, the body read) against plain net/http
// over HTTP/2 on the same loopback node (h2c, no latency), alternating the two so that both
// see the same machine noise, and reports their ratio as "x-plain" (target: at most 1.15).
// Both clients bound the whole call (Client.Timeout, CallTimeout) and read the whole body.
func BenchmarkH2Overhead(b *testing.B) {
	node, err := h2node.New()
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos, DisableCompression: true}
	defer tr.CloseIdleConnections()
	plain := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	pool, err := New(Config{Routes: []string{node.Addr}, ReadTimeout: time.Second, CallTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	req, _ := http.NewRequest(http.MethodGet, node.URL+"/", nil)
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
		if _, err := pool.Do(ctx, req); err != nil {
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
