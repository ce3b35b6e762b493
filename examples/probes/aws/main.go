// Command aws is a labrun probe for aws-sdk-go-v2's standard retryer (retry.Standard, v1.48.0)
// around net/http to the probe's URL, no AWS service: each call is the SDK's attempt loop
// (aws/retry/middleware.go), one retryer, so one quota, for every call.
//
//	PROBE_TIMEOUT       http.Client.Timeout, each attempt's; unset: none
//	PROBE_MAX_ATTEMPTS  StandardOptions.MaxAttempts; unset: 3
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/labrun/labrun/examples/probes/goprotocol"
)

func main() {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	pool, err := goprotocol.CA()
	if err != nil {
		fmt.Fprintf(os.Stderr, "LABRUN_CA: %v\n", err)
		os.Exit(2)
	}
	if pool != nil {
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: transport, Timeout: goprotocol.Duration("PROBE_TIMEOUT", 0)}
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		if n := goprotocol.Atoi(goprotocol.EnvOr("PROBE_MAX_ATTEMPTS", "0")); n > 0 {
			o.MaxAttempts = n
		}
	})
	attempt := func(method, url string, body []byte) error {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, url, r)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode/100 != 2 {
			return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: fmt.Errorf("status %d", resp.StatusCode)}
		}
		return nil
	}
	nop := func(error) error { return nil }
	os.Exit(goprotocol.Run(func(_ int, method, url string, body []byte) (bool, error) {
		releaseRetry := nop
		for n := 1; ; n++ {
			releaseAttempt := nop
			if n == 1 {
				releaseAttempt = std.GetInitialToken()
			}
			err := attempt(method, url, body)
			_ = releaseRetry(err)
			_ = releaseAttempt(err)
			switch {
			case err == nil:
				return true, nil
			case !std.IsErrorRetryable(err), n >= std.MaxAttempts():
				return false, err
			}
			rel, tokenErr := std.GetRetryToken(context.Background(), err)
			if tokenErr != nil {
				return false, errors.Join(err, tokenErr)
			}
			delay, err := std.RetryDelay(n, err)
			if err != nil {
				return false, err
			}
			time.Sleep(delay)
			releaseRetry = rel
		}
	}))
}
