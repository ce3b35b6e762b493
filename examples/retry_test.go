// Package examples shows labrun's labtest API from a module of its own, the way a team uses
// it in its own repository: against a plain net/http client, and against a popular retry
// library, to see whether a retry after a timeout charges the server twice.
package examples

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/labrun/labrun/labtest"
	"github.com/labrun/labrun/results"
)

const ms = time.Millisecond

// TestPlainClientReadTimeoutIsNotADeadline: Transport.ResponseHeaderTimeout bounds the wait
// for the head only; a body trickling slower than any sane budget goes through.
func TestPlainClientReadTimeoutIsNotADeadline(t *testing.T) {
	lab := labtest.Start(t)
	tr := &http.Transport{ResponseHeaderTimeout: 200 * ms}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	row := lab.Run(context.Background(), c, labtest.Trickle(6, 100*ms), labtest.Limits{HeaderTimeout: 200 * ms})
	if row.Outcome != results.OK || row.Expected.Outcome != results.OK {
		t.Errorf("got %s", row)
	}
	if d := row.Elapsed - row.Expected.Elapsed; d < -250*ms || d > 250*ms {
		t.Errorf("took %v, the model says %v", row.Elapsed, row.Expected.Elapsed)
	}
}

// TestRetryableHTTPChargesThreeTimes: go-retryablehttp retries a POST after a timeout (its
// default policy retries every transport error, and it buffers the body so that it can send
// it again). The server, which takes 400 ms to answer, reserves on every attempt.
func TestRetryableHTTPChargesThreeTimes(t *testing.T) {
	lab := labtest.Start(t)
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.RetryMax = 2
	rc.RetryWaitMin, rc.RetryWaitMax = 10*ms, 10*ms
	rc.HTTPClient.Timeout = 150 * ms
	defer rc.HTTPClient.CloseIdleConnections()

	lim := labtest.Limits{AttemptTimeout: 150 * ms, Retries: 2, Backoff: 10 * ms}
	row := lab.Run(context.Background(), rc.StandardClient(), labtest.Reserve(400*ms), lim)
	if row.Executions != 3 || row.Expected.Executions != 3 {
		t.Errorf("reserved %d times, the model says %d: %s", row.Executions, row.Expected.Executions, row)
	}
	if row.Outcome != results.Deadline {
		t.Errorf("got outcome %s (%v), want deadline: every attempt hit http.Client.Timeout", row.Outcome, row.Err)
	}

	// The same client against a server that deduplicates by order id reserves once.
	row = lab.Run(context.Background(), rc.StandardClient(), labtest.IdempotentReserve(400*ms), lim)
	if row.Executions != 1 {
		t.Errorf("idempotent server reserved %d times: %s", row.Executions, row)
	}
}
