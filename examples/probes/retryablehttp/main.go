// Command retryablehttp is a labrun probe for hashicorp/go-retryablehttp:
//
//	go build -o /tmp/retryablehttp ./probes/retryablehttp && labrun probe -- /tmp/retryablehttp
//
// One retryablehttp.Client serves every call (its HTTPClient, go-cleanhttp's pooled client,
// pools connections). Its defaults: RetryMax 4, waits from RetryWaitMin 1 s doubling to
// RetryWaitMax 30 s, DefaultRetryPolicy (every error but a certificate's, a redirect limit's,
// a scheme's or a header's; every 5xx but 501, and 429), the body rewound for every attempt,
// and no timeout. Its logger is turned off (it logs every retry on stderr).
//
// Configure by environment (Go durations; unset: the library's defaults):
//
//	PROBE_TIMEOUT    HTTPClient.Timeout: a deadline for each attempt, not the call
//	PROBE_RETRY_MAX  RetryMax
//	PROBE_WAIT_MIN   RetryWaitMin
//	PROBE_WAIT_MAX   RetryWaitMax
package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/labrun/labrun/examples/probes/goprotocol"
)

func main() {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient.Timeout = goprotocol.Duration("PROBE_TIMEOUT", 0)
	c.RetryMax = goprotocol.Atoi(goprotocol.EnvOr("PROBE_RETRY_MAX", fmt.Sprint(c.RetryMax)))
	c.RetryWaitMin = goprotocol.Duration("PROBE_WAIT_MIN", c.RetryWaitMin)
	c.RetryWaitMax = goprotocol.Duration("PROBE_WAIT_MAX", c.RetryWaitMax)
	pool, err := goprotocol.CA()
	if err != nil {
		fmt.Fprintf(os.Stderr, "LABRUN_CA: %v\n", err)
		os.Exit(2)
	}
	if pool != nil {
		c.HTTPClient.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	os.Exit(goprotocol.Run(func(_ int, method, url string, body []byte) (bool, error) {
		var b any
		if body != nil {
			b = bytes.NewReader(body)
		}
		req, err := retryablehttp.NewRequest(method, url, b)
		if err != nil {
			return false, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return false, err
		}
		return resp.StatusCode/100 == 2, nil
	}))
}
