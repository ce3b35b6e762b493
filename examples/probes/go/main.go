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
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labrun/labrun/examples/probes/goprotocol"
)

func main() {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = goprotocol.Duration("PROBE_HEADER_TIMEOUT", 0)
	if d := goprotocol.Duration("PROBE_DIAL_TIMEOUT", 0); d > 0 {
		tr.DialContext = (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext
	}
	tr.MaxConnsPerHost = goprotocol.Atoi(goprotocol.EnvOr("PROBE_MAX_CONNS", "0"))
	pool, err := goprotocol.CA()
	if err != nil {
		fmt.Fprintf(os.Stderr, "LABRUN_CA: %v\n", err)
		os.Exit(2)
	}
	if pool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: tr, Timeout: goprotocol.Duration("PROBE_TIMEOUT", 0)}
	retries := goprotocol.Atoi(goprotocol.EnvOr("PROBE_RETRIES", "0"))
	os.Exit(goprotocol.Run(func(_ int, method, url string, body []byte) (bool, error) {
		var last error // the last attempt's error, which Run reports
		for range retries + 1 {
			var r io.Reader
			if body != nil {
				r = bytes.NewReader(body)
			}
			req, err := http.NewRequest(method, url, r)
			if err != nil {
				return false, err
			}
			resp, err := client.Do(req)
			if last = err; err != nil {
				continue
			}
			_, last = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if last == nil && resp.StatusCode/100 == 2 {
				return true, nil
			}
		}
		return false, last
	}))
}
