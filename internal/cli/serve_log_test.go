package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/fakesrv"
)

// TestServeLogsRequests: labrun serve prints one line per request on stderr as it ends, with
// its time, method and path, what the fault did and how it ended; --quiet prints none.
func TestServeLogsRequests(t *testing.T) {
	s := startServe(t)
	get := func(path string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	get("/trickle?bytes=3&every=20ms", 5*time.Second)
	get("/stall", 100*time.Millisecond)
	get("/status/503", 5*time.Second)
	waitFor := func(re *regexp.Regexp) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for !re.MatchString(s.stderr.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("no line matching %s on stderr:\n%s", re, s.stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stamp := `(?m)^\d\d:\d\d:\d\d\.\d{3} GET `
	waitFor(regexp.MustCompile(stamp + `/trickle\?bytes=3&every=20ms · answered 200( \(head at \d+ ms\))?, 3 B sent · done at \d+ ms$`))
	waitFor(regexp.MustCompile(stamp + `/stall · held it, no answer · client left at \d+ ms$`))
	waitFor(regexp.MustCompile(stamp + `/status/503 · answered 503( \(head at \d+ ms\))?, \d+ B sent · done at \d+ ms$`))
	if code := s.wait(); code != exitPass {
		t.Errorf("exit %d, want 0", code)
	}

	q := startServe(t, "--quiet")
	resp, err := http.Get(q.url + "/delay")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	q.wait()
	if strings.Contains(q.stderr.String(), "GET /delay ·") {
		t.Errorf("--quiet logged a request:\n%s", q.stderr.String())
	}
}

// TestRequestLine words each kind of ending; a long or hostile path is cut and made
// printable.
func TestRequestLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 1, 250_000_000, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		r    fakesrv.Request
		want string
	}{
		{fakesrv.Request{Method: "POST", Path: "/reserve?order=7&delay=2s", Arrived: t0, HeadSent: at(2000), Finished: at(1000), ClientGone: true, Reserved: true},
			"12:00:01.250 POST /reserve?order=7&delay=2s · reserved; sent the head, then 0 B · client left at 1000 ms"},
		{fakesrv.Request{Method: "GET", Path: "/trickle", Arrived: t0, HeadSent: at(0), Finished: at(4001), Status: 200, BytesSent: 10},
			"12:00:01.250 GET /trickle · answered 200, 10 B sent · done at 4001 ms"},
		{fakesrv.Request{Method: "GET", Path: "/delay?delay=300ms", Arrived: t0, HeadSent: at(300), Finished: at(300), Status: 200},
			"12:00:01.250 GET /delay?delay=300ms · answered 200 (head at 300 ms) · done at 300 ms"},
		{fakesrv.Request{Method: "POST", Path: "/reserve?order=7", Arrived: t0, Finished: at(0), Failed: "reset", Duplicate: true},
			"12:00:01.250 POST /reserve?order=7 · a duplicate, not reserved again; read it, then reset the connection · done at 0 ms"},
		{fakesrv.Request{Method: "GET", Path: "/close-after-read", Endpoint: "close-after-read", Arrived: t0, Finished: at(0)},
			"12:00:01.250 GET /close-after-read · read it, then closed the connection without answering · done at 0 ms"},
		{fakesrv.Request{Method: "GET", Path: "/delay?fail-rate=0.1&seed=7&fail=reset", Arrived: t0, Finished: at(0), Failed: "reset",
			SeedNo: 17, Behaviour: fakesrv.Behaviour{FailRate: 0.1, Seed: 7, Fail: "reset"}},
			"12:00:01.250 GET /delay?fail-rate=0.1&seed=7&fail=reset · #17 of seed 7 fails (reset); read it, then reset the connection · done at 0 ms"},
		{fakesrv.Request{Method: "GET", Path: "/delay?delay-dist=lognormal:80ms:0.4", Arrived: t0, HeadSent: at(93), Finished: at(93), Status: 200,
			SeedNo: 3, Drawn: 93 * time.Millisecond, Behaviour: fakesrv.Behaviour{Seed: 1, DelayDist: "lognormal:80ms:0.4"}},
			"12:00:01.250 GET /delay?delay-dist=lognormal:80ms:0.4 · #3 of seed 1, drew 93 ms; answered 200 (head at 93 ms) · done at 93 ms"},
		{fakesrv.Request{Method: "GET", Path: "/a\x1b[2J", Arrived: t0, Finished: at(0), Status: 404},
			"12:00:01.250 GET /a?[2J · answered 404 · done at 0 ms"},
	}
	for _, tt := range tests {
		if got := requestLine(tt.r); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
	long := requestLine(fakesrv.Request{Method: "GET", Path: "/delay?pad=" + strings.Repeat("x", 10_000), Arrived: t0, Finished: at(0)})
	if n := utf8.RuneCountInString(long); n > maxLoggedPath+100 {
		t.Errorf("a 10 KB path makes a line of %d runes", n)
	}
}

// TestServeBannerOneScreen: at 80 and 120 columns the banner is a few lines, each within the
// width, every endpoint's path in it, and the URL with a request to try last, so that it is on
// a 24-line terminal's screen with the first requests' lines under it.
func TestServeBannerOneScreen(t *testing.T) {
	url := "http://127.0.0.1:54321"
	for _, cols := range []int{80, 120} {
		got := serveBanner(url, fakesrv.Endpoints(), cols)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) > 8 || widestLine(got) >= cols {
			t.Errorf("%d columns: %d lines, widest %d:\n%s", cols, len(lines), widestLine(got), got)
		}
		for _, e := range fakesrv.Endpoints() {
			if !strings.Contains(got, " "+e.Path+" ") && !strings.Contains(got, " "+e.Path+"\n") {
				t.Errorf("%d columns: %s not in the banner:\n%s", cols, e.Path, got)
			}
		}
		if n := len(lines); !strings.Contains(lines[n-2], "serving on "+url) || !strings.HasPrefix(lines[n-1], "  curl -s '"+url+"/") {
			t.Errorf("%d columns: the URL and what to try are not last:\n%s", cols, got)
		}
	}
}

// TestCallLine words a gRPC call's line as requestLine words a request's.
func TestCallLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 1, 250_000_000, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tt := range []struct {
		c    grpcsrv.Call
		want string
	}{
		{grpcsrv.Call{Method: "/labrun.Fault/Call", ID: "c1", Fault: "work=400ms,ignore-ctx", Timeout: "199m", Arrived: t0,
			CtxEnd: at(200), CtxErr: "DeadlineExceeded", Executed: true, Code: "DeadlineExceeded", Done: at(400)},
			"12:00:01.250 /labrun.Fault/Call call c1 · fault work=400ms,ignore-ctx, grpc-timeout 199m · DeadlineExceeded, work done (charged) · its grpc-timeout ran out at 200 ms"},
		{grpcsrv.Call{Method: "/labrun.Fault/Stream", Fault: "every=100ms,messages=3", Arrived: t0, Messages: 3, Code: "OK", Done: at(300)},
			"12:00:01.250 /labrun.Fault/Stream · fault every=100ms,messages=3 · OK, 3 messages sent · done at 300 ms"},
		{grpcsrv.Call{Method: "/labrun.Fault/Call", Arrived: t0, CtxEnd: at(50), CtxErr: "Canceled", Code: "Canceled", Done: at(50)},
			"12:00:01.250 /labrun.Fault/Call · no fault · Canceled · the caller left at 50 ms"},
	} {
		if got := callLine(tt.c); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestEndpointListFits: on a terminal the endpoint list is never as wide as the terminal; it
// is the aligned list where that fits.
func TestEndpointListFits(t *testing.T) {
	eps := fakesrv.Endpoints()
	full := endpointList(eps)
	for _, cols := range []int{60, 80, 120, 160, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			got := endpointListFor(eps, cols)
			if widestLine(got) >= cols {
				t.Errorf("a line of %d columns at %d:\n%s", widestLine(got), cols, got)
			}
			if widestLine(full) < cols && got != full {
				t.Errorf("the aligned list fits at %d but was not used", cols)
			}
			for _, e := range eps {
				if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(e.Summary), " ")) {
					t.Errorf("%s's summary is missing at %d", e.Path, cols)
				}
			}
		})
	}
	if got := endpointListFor(eps, 0); got != full {
		t.Error("with no width, the list is not the aligned one")
	}
}
