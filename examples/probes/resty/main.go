// Command resty is a labrun probe for go-resty/resty v2:
//
//	go build -o /tmp/resty ./probes/resty && labrun probe -- /tmp/resty
//
// One resty.Client serves every call (its http.Client pools connections). Its defaults: no
// retry (RetryCount 0), no timeout, Go's redirect policy (10). With SetRetryCount(N) it
// retries any error of any method, a POST's and a body read's included, after waits of
// RetryWaitTime 100 ms doubling up to RetryMaxWaitTime 2 s, with jitter; a status only
// through AddRetryCondition.
//
// Configure by environment (unset: the library's defaults):
//
//	PROBE_TIMEOUT      SetTimeout, a Go duration: http.Client.Timeout, a deadline for each attempt
//	PROBE_RETRY_COUNT  SetRetryCount
package main

import (
	"os"

	"github.com/go-resty/resty/v2"
	"github.com/labrun/labrun/examples/probes/goprotocol"
)

func main() {
	c := resty.New()
	c.SetLogger(quiet{})
	if d := goprotocol.Duration("PROBE_TIMEOUT", 0); d > 0 {
		c.SetTimeout(d)
	}
	c.SetRetryCount(goprotocol.Atoi(goprotocol.EnvOr("PROBE_RETRY_COUNT", "0")))
	if ca := os.Getenv("LABRUN_CA"); ca != "" {
		c.SetRootCertificate(ca) // the lab's CA instead of the system's
	}
	os.Exit(goprotocol.Run(func(_ int, method, url string, body []byte) (bool, error) {
		req := c.R()
		if body != nil {
			req.SetBody(body)
		}
		resp, err := req.Execute(method, url)
		if err != nil {
			return false, err
		}
		return resp.StatusCode()/100 == 2, nil
	}))
}

// quiet is a resty logger that keeps stderr for the probe's own lines.
type quiet struct{}

func (quiet) Errorf(string, ...any) {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Debugf(string, ...any) {}
