package labtest

import (
	"context"
	"errors"
	"github.com/labrun/labrun/results"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBadArguments feeds every exported entry point bad input: each must return (within a
// second) a row that says what is wrong, never panic, hang or model the impossible.
func TestBadArguments(t *testing.T) {
	lab := Start(t)
	ctx := context.Background()
	c := newClient(t, &http.Transport{}, time.Second)
	var nilClient *http.Client
	var nilFunc DoerFunc
	var nilCtx context.Context
	var zero Lab
	var nilLab *Lab
	for _, tt := range []struct {
		name string
		lab  *Lab
		ctx  context.Context
		c    Doer
		s    Scenario
		lim  Limits
		want string
	}{
		{"nil Doer", lab, ctx, nil, Slow(0), Limits{}, "nil client"},
		{"nil *http.Client", lab, ctx, nilClient, Slow(0), Limits{}, "nil client (*http.Client)"},
		{"nil DoerFunc", lab, ctx, nilFunc, Slow(0), Limits{}, "nil client"},
		{"nil context", lab, nilCtx, c, Slow(0), Limits{}, "nil context"},
		{"zero Lab", &zero, ctx, c, Slow(0), Limits{}, "not started"},
		{"nil Lab", nilLab, ctx, c, Slow(0), Limits{}, "not started"},
		{"zero Scenario", lab, ctx, c, Scenario{}, Limits{}, "zero Scenario"},
		{"negative trickle", lab, ctx, c, Trickle(-5, -time.Second), Limits{}, "must not be negative"},
		{"trickle of too many bytes", lab, ctx, c, Trickle(math.MaxInt, time.Millisecond), Limits{}, "bytes must be a whole number from 0 to 1048576"},
		{"negative slow", lab, ctx, c, Slow(-time.Hour), Limits{}, "delay must not be negative, got -1h0m0s"},
		{"negative stall", lab, ctx, c, Stall(-time.Second), Limits{}, "max must not be negative"},
		{"negative reserve", lab, ctx, c, Reserve(-time.Second), Limits{}, "delay must not be negative"},
		{"negative idempotent reserve", lab, ctx, c, IdempotentReserve(-time.Second), Limits{}, "delay must not be negative"},
		{"empty method", lab, ctx, c, CloseAfterRead(""), Limits{}, "not an HTTP method"},
		{"method with a space", lab, ctx, c, CloseAfterRead("GET /"), Limits{}, "not an HTTP method"},
		{"retries MaxInt", lab, ctx, c, Slow(0), Limits{Retries: math.MaxInt}, "Retries is 9223372036854775807, want 0 to 1000"},
		{"negative retries", lab, ctx, c, Slow(0), Limits{Retries: -1}, "Retries is -1"},
		{"negative backoff", lab, ctx, c, Slow(0), Limits{Retries: 1, Backoff: -time.Second}, "Backoff is -1s"},
		{"negative deadline", lab, ctx, c, Slow(0), Limits{Deadline: -time.Second}, "Deadline is -1s"},
		{"negative attempt timeout", lab, ctx, c, Slow(0), Limits{AttemptTimeout: -1}, "AttemptTimeout is -1ns"},
		{"negative header timeout", lab, ctx, c, Slow(0), Limits{HeaderTimeout: -1}, "HeaderTimeout"},
		{"negative connect timeout", lab, ctx, c, Slow(0), Limits{ConnectTimeout: -1}, "ConnectTimeout"},
		{"negative pool", lab, ctx, c, Slow(0), Limits{Pool: -1}, "Pool is -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, r Row) {
				t.Helper()
				if r.Outcome != results.Failed || !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), tt.want) {
					t.Errorf("%s: got outcome %s, err %v; want failed, %q", how, r.Outcome, r.Err, tt.want)
				}
				if r.Expected != (Expectation{}) || r.Requests != 0 {
					t.Errorf("%s: a call not made has expectation %+v and %d requests", how, r.Expected, r.Requests)
				}
				if s := r.String(); !strings.Contains(s, "not run") {
					t.Errorf("%s: String() = %q, want it to say the call was not run", how, s)
				}
			}
			start := time.Now()
			check("Run", tt.lab.Run(tt.ctx, tt.c, tt.s, tt.lim))
			rows := tt.lab.RunConcurrent(tt.ctx, tt.c, tt.s, 2, tt.lim)
			if len(rows) != 1 {
				t.Fatalf("RunConcurrent: %d rows, want one that says what is wrong", len(rows))
			}
			check("RunConcurrent", rows[0])
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v to refuse", d)
			}
		})
	}
	for _, n := range []int{0, -1, math.MinInt, MaxConcurrent + 1} {
		rows := lab.RunConcurrent(ctx, c, Slow(0), n, Limits{})
		if len(rows) != 1 || rows[0].Outcome != results.Failed || !errors.Is(rows[0].Err, ErrInvalid) || !strings.Contains(rows[0].Err.Error(), "want 1 to") {
			t.Errorf("RunConcurrent of %d: got %v", n, rows)
		}
	}
	// A Lab that was not started closes and has no URL; so does a nil one.
	zero.Close()
	nilLab.Close()
	if zero.URL() != "" || nilLab.URL() != "" {
		t.Error("a Lab that was not started has a URL")
	}
	if got := Classify(nilCtx, context.DeadlineExceeded); got != results.Failed {
		t.Errorf("Classify with a nil context: got %s", got)
	}
}

// TestHugeLimitsDoNotWrap: backoffs and timeouts near the largest Duration saturate the
// expectation instead of wrapping it into a negative time.
func TestHugeLimitsDoNotWrap(t *testing.T) {
	for _, lim := range []Limits{
		{AttemptTimeout: 100 * ms, Retries: 3, Backoff: math.MaxInt64},
		{AttemptTimeout: 100 * ms, Retries: 3, Backoff: math.MaxInt64 / 2},
		{AttemptTimeout: math.MaxInt64 / 2, Retries: MaxRetries, Backoff: math.MaxInt64 / 3},
		{AttemptTimeout: 100 * ms, Retries: 2, Backoff: math.MaxInt64, Deadline: math.MaxInt64},
	} {
		e := lim.expect(Slow(time.Second))
		if e.Elapsed < 0 || e.Attempts < 1 || e.Attempts > lim.Retries+1 {
			t.Errorf("%+v: got %+v", lim, e)
		}
	}
	// MaxRetries attempts are computed at once.
	start := time.Now()
	e := Limits{AttemptTimeout: 10 * ms, Retries: MaxRetries}.expect(Slow(time.Second))
	if e.Attempts != MaxRetries+1 || e.Elapsed != time.Duration(MaxRetries+1)*10*ms {
		t.Errorf("MaxRetries: got %+v", e)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("MaxRetries took %v to model", d)
	}
}

// TestDoerBreaksContract: a Doer that returns neither a response nor an error, or a response
// without a Body, gets a failed row that says so, from Run and RunConcurrent.
func TestDoerBreaksContract(t *testing.T) {
	lab := Start(t)
	for _, tt := range []struct {
		name string
		c    DoerFunc
		want string
	}{
		{"nil, nil", func(*http.Request) (*http.Response, error) { return nil, nil }, "neither a response nor an error"},
		{"nil Body", func(*http.Request) (*http.Response, error) { return &http.Response{StatusCode: 200}, nil }, "a nil Body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rows := append([]Row{lab.Run(context.Background(), tt.c, Slow(0), Limits{})},
				lab.RunConcurrent(context.Background(), tt.c, Slow(0), 2, Limits{})...)
			for i, r := range rows {
				if r.Outcome != results.Failed || r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
					t.Errorf("row %d: got outcome %s, err %v; want failed, %q", i, r.Outcome, r.Err, tt.want)
				}
			}
		})
	}
}
