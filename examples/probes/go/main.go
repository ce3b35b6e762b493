// Command go is a labrun probe for Go's net/http:
//
//	go build -o /tmp/goprobe ./probes/go && labrun probe -- /tmp/goprobe
//
// One http.Client serves every call (its Transport pools connections). LABRUN_CONCURRENCY
// goroutines each make LABRUN_CALLS calls in sequence, LABRUN_PAUSE seconds apart. It exits
// 0 when every call got a 2xx answer and prints a report line per call. When LABRUN_CA names a
// PEM file, its certificates are trusted besides the system's.
//
// Configure by environment (Go durations; unset: DefaultTransport's and DefaultClient's):
//
//	PROBE_TIMEOUT          Client.Timeout: a deadline for the call, body included
//	PROBE_HEADER_TIMEOUT   Transport.ResponseHeaderTimeout: the wait for the head only
//	PROBE_DIAL_TIMEOUT     net.Dialer.Timeout
//	PROBE_MAX_CONNS        Transport.MaxConnsPerHost (0: no limit)
//	PROBE_RETRIES          calls made again after a failure (net/http re-sends only what it
//	                       replays itself); default 0
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	url, method := os.Getenv("LABRUN_URL"), envOr("LABRUN_METHOD", "GET")
	calls, concurrency := atoi(envOr("LABRUN_CALLS", "1")), atoi(envOr("LABRUN_CONCURRENCY", "1"))
	pause, _ := strconv.ParseFloat(envOr("LABRUN_PAUSE", "0"), 64)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = duration("PROBE_HEADER_TIMEOUT")
	if d := duration("PROBE_DIAL_TIMEOUT"); d > 0 {
		tr.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	}
	tr.MaxConnsPerHost = atoi(envOr("PROBE_MAX_CONNS", "0"))
	if ca := os.Getenv("LABRUN_CA"); ca != "" {
		pool, err := trust(ca)
		if err != nil {
			fmt.Fprintf(os.Stderr, "LABRUN_CA: %v\n", err)
			return 2
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: tr, Timeout: duration("PROBE_TIMEOUT")}
	retries := atoi(envOr("PROBE_RETRIES", "0"))

	var mu sync.Mutex // guards failed and the report lines
	failed := 0
	call := func(n int) {
		start := time.Now()
		ok := false
		for range retries + 1 {
			var body io.Reader
			if method == "POST" {
				body = strings.NewReader("labrun")
			}
			req, err := http.NewRequest(method, url, body)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				break
			}
			resp, err := client.Do(req)
			if err != nil {
				fmt.Fprintf(os.Stderr, "call %d: %v\n", n, err)
				continue
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if ok = err == nil && resp.StatusCode/100 == 2; ok {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		outcome := "ok"
		if !ok {
			outcome = "error"
			failed++
		}
		fmt.Printf("LABRUN call=%d ms=%.1f outcome=%s\n", n, float64(time.Since(start))/float64(time.Millisecond), outcome)
	}
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Go(func() {
			for i := range calls {
				if i > 0 && pause > 0 {
					time.Sleep(time.Duration(pause * float64(time.Second)))
				}
				call(w*calls + i + 1)
			}
		})
	}
	wg.Wait()
	if failed > 0 {
		return 1
	}
	return 0
}

// trust is the system's certificate pool with the certificates of the PEM file added.
func trust(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "not a number: %q\n", s)
		os.Exit(2)
	}
	return n
}

func duration(name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	return d
}
