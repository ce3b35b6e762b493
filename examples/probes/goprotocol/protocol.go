// Package goprotocol is the labrun probe protocol (docs/probe.md) for the Go probes of
// libraries: it reads LABRUN_URL, LABRUN_METHOD, LABRUN_CALLS, LABRUN_CONCURRENCY and
// LABRUN_PAUSE, runs LABRUN_CONCURRENCY goroutines that each make LABRUN_CALLS calls in
// sequence (or, with LABRUN_RATE, LABRUN_CALLS calls open loop at that rate), prints a report line per call (the whole call, every retry of the library's
// included) and returns the exit code: 0 when every call got a 2xx answer.
package goprotocol

import (
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is one call of a probe: the library's whole call, retries included; ok is a 2xx
// answer read in full.
type Call func(n int, method, url string, body []byte) (ok bool, err error)

// Run makes the calls the protocol asks for with call and returns the exit code.
func Run(call Call) int {
	url, method := os.Getenv("LABRUN_URL"), EnvOr("LABRUN_METHOD", "GET")
	calls, concurrency := Atoi(EnvOr("LABRUN_CALLS", "1")), Atoi(EnvOr("LABRUN_CONCURRENCY", "1"))
	pause, _ := strconv.ParseFloat(EnvOr("LABRUN_PAUSE", "0"), 64)
	var body []byte
	if method == "POST" {
		body = []byte("labrun")
	}
	var mu sync.Mutex // guards failed and the report lines
	failed := 0
	oneAt := func(n int, url string) {
		start := time.Now()
		ok, err := call(n, method, url, body)
		mu.Lock()
		defer mu.Unlock()
		outcome := "ok"
		if !ok {
			outcome = "error"
			failed++
			if err != nil {
				fmt.Fprintf(os.Stderr, "call %d: %v\n", n, err)
			}
		}
		fmt.Printf("LABRUN call=%d ms=%.1f outcome=%s\n", n, float64(time.Since(start))/float64(time.Millisecond), outcome)
	}
	one := func(n int) { oneAt(n, url) }
	var wg sync.WaitGroup
	if rate, _ := strconv.ParseFloat(EnvOr("LABRUN_RATE", "0"), 64); rate > 0 {
		// Open loop: call n starts at (n-1)/rate whatever the calls before it do, and names
		// itself in its query.
		start := time.Now()
		for i := range calls {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
			wg.Go(func() { oneAt(i+1, CallURL(url, i+1)) })
		}
		wg.Wait()
		return exit(failed)
	}
	for w := range concurrency {
		wg.Go(func() {
			for i := range calls {
				if i > 0 && pause > 0 {
					time.Sleep(time.Duration(pause * float64(time.Second)))
				}
				one(w*calls + i + 1)
			}
		})
	}
	wg.Wait()
	return exit(failed)
}

func exit(failed int) int {
	if failed > 0 {
		return 1
	}
	return 0
}

// CallURL is call n's URL at LABRUN_RATE: call=n added to url's query.
func CallURL(url string, n int) string {
	if strings.Contains(url, "?") {
		return url + "&call=" + strconv.Itoa(n)
	}
	return url + "?call=" + strconv.Itoa(n)
}

// CA is LABRUN_CA's certificates added to the system's pool, nil when LABRUN_CA is unset.
func CA() (*x509.CertPool, error) {
	file := os.Getenv("LABRUN_CA")
	if file == "" {
		return nil, nil
	}
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

// EnvOr is the variable name's value, def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Atoi is s as a number; a probe given something else exits 2.
func Atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "not a number: %q\n", s)
		os.Exit(2)
	}
	return n
}

// Duration is the Go duration in the variable name, def when it is unset.
func Duration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	return d
}
