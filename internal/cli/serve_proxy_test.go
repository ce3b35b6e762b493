package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
)

// upstreamOrders is a small real service for serve --upstream: it counts the POST /orders it
// executed and answers 201 at once; any other path, 200.
func upstreamOrders(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var orders atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost && r.URL.Path == "/orders" {
			orders.Add(1)
			w.WriteHeader(http.StatusCreated)
		}
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(up.Close)
	return up, &orders
}

// TestServeProxyRetriesReachUpstream: a caller with a 1 s timeout and 2 retries, in front of
// a service that labrun holds back 2 s: 3 orders executed upstream, the caller left each at
// about 1000 ms, as the log and /labrun/stats say.
func TestServeProxyRetriesReachUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s of timeouts")
	}
	up, orders := upstreamOrders(t)
	const rule = "POST /orders delay=2s"
	s := startServe(t, "--upstream", up.URL, "--fault", rule)

	client := &http.Client{Timeout: time.Second}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the call and its 2 retries
		resp, err := client.Post(s.url+"/orders", "application/json", strings.NewReader(`{"item":42}`))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("attempt %d: got %s, want a timeout", attempt+1, resp.Status)
		}
		lastErr = err
	}
	var ne interface{ Timeout() bool }
	if !errors.As(lastErr, &ne) || !ne.Timeout() {
		t.Errorf("got %v, want a timeout", lastErr)
	}
	if got := orders.Load(); got != 3 {
		t.Errorf("the upstream executed %d orders, want 3", got)
	}

	// A departure is logged when its handler notices it: wait for the third line.
	left := regexp.MustCompile(`POST /orders · fault 'POST /orders delay=2s'; forwarded, upstream 201 at \d+ ms; held it, no answer · client left at (\d+) ms`)
	var lines [][]string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if lines = left.FindAllStringSubmatch(s.stderr.String(), -1); len(lines) == 3 {
			break
		}
	}
	if len(lines) != 3 {
		t.Fatalf("got %d departure lines, want 3; stderr:\n%s", len(lines), s.stderr.String())
	}
	for _, l := range lines {
		t.Log(l[0])
		// The client's second starts before the connection and the request; the server's at
		// the request's arrival: a few ms less, never more.
		if ms, _ := strconv.Atoi(l[1]); ms < 900 || ms > 1050 {
			t.Errorf("the client left at %d ms, want about 1000 ms: %s", ms, l[0])
		}
	}
	var st struct {
		Forwarded   int            `json:"forwarded"`
		ClientsGone int            `json:"clients_gone"`
		Faulted     map[string]int `json:"faulted"`
		Requests    map[string]int `json:"requests"`
	}
	getJSON(t, s.url+"/labrun/stats", &st)
	if st.Forwarded != 3 || st.ClientsGone != 3 || st.Faulted[rule] != 3 || st.Requests["upstream"] != 3 {
		t.Errorf("got /labrun/stats %+v, want 3 forwarded, 3 clients gone, 3 under %q", st, rule)
	}
}

// TestServeProxyFaultOnOpenConnection: a fault switched on with POST /labrun/faults applies
// to the next request of a keep-alive connection opened before it (the connection is reused,
// and answered the fault), and DELETE switches it off again.
func TestServeProxyFaultOnOpenConnection(t *testing.T) {
	up, _ := upstreamOrders(t)
	s := startServe(t, "--upstream", up.URL, "--quiet")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	get := func() (status int, reused bool) {
		t.Helper()
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/items/7", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused
	}
	if status, _ := get(); status != http.StatusOK {
		t.Fatalf("before the fault: got %d, want the upstream's 200", status)
	}

	setFaults(t, s.url, http.MethodPost, `{"faults": ["GET /items/* status=503"]}`)
	status, reused := get()
	if status != http.StatusServiceUnavailable || !reused {
		t.Errorf("on the open connection: got %d (reused %v), want 503 on the reused connection", status, reused)
	}
	setFaults(t, s.url, http.MethodDelete, "")
	if status, reused := get(); status != http.StatusOK || !reused {
		t.Errorf("after DELETE: got %d (reused %v), want the upstream's 200 on the same connection", status, reused)
	}
	var st struct {
		Forwarded int            `json:"forwarded"`
		Faulted   map[string]int `json:"faulted"`
	}
	getJSON(t, s.url+"/labrun/stats", &st)
	if st.Forwarded != 2 || st.Faulted["GET /items/* status=503"] != 1 {
		t.Errorf("got /labrun/stats %+v, want 2 forwarded and 1 faulted", st)
	}
}

// setFaults sends the fault rules' control request on a connection of its own.
func setFaults(t *testing.T, base, method, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+"/labrun/faults", strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /labrun/faults: got %s %s", method, resp.Status, msg)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestServeProxyUsageErrors: a bad --upstream or --fault is one line and exit 2, before
// anything is served.
func TestServeProxyUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "ftp://127.0.0.1:1"}, `labrun: --upstream: the upstream URL "ftp://127.0.0.1:1": want scheme http, https or h2c`},
		{[]string{"--upstream", "http://"}, `labrun: --upstream: the upstream URL "http://" has no host`},
		{[]string{"--upstream", "http://example.com"}, "labrun: --upstream http://example.com: the upstream is not a loopback address; pass --allow-remote to forward to it"},
		{[]string{"--upstream", "http://127.0.0.1:1/api"}, `labrun: --upstream: the upstream URL "http://127.0.0.1:1/api" must be scheme://host:port alone: paths are the client's`},
		{[]string{"--upstream", "http://u:p@127.0.0.1:1"}, `labrun: --upstream: the upstream URL "http://u:p@127.0.0.1:1" carries a user: put credentials in the client's requests`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--fault", "POST /orders"}, `labrun: --fault: fault rule "POST /orders": want METHOD PATH KEY=VALUE..., such as 'POST /orders delay=2s'`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--fault", "POST /orders delay=soon"}, `labrun: --fault: fault rule "POST /orders delay=soon": delay must be a duration such as 250ms, 2s or 1m30s, got "soon"`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--fault", "POST /orders order=1"}, `labrun: --fault: fault rule "POST /orders order=1": order does not apply to a proxy: the upstream keeps its own state`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--fault", "GET /a status=503 fail=reset"}, `labrun: --fault: fault rule "GET /a status=503 fail=reset": status answers alone; it takes only delay`},
		// A table's commas stay in its rule: the whole rule is named, not its first piece.
		{[]string{"--upstream", "http://127.0.0.1:1", "--fault", "GET /a delay-dist=table:p0=10ms,p50=80ms,p100=1s order=1"}, `labrun: --fault: fault rule "GET /a delay-dist=table:p0=10ms,p50=80ms,p100=1s order=1": order does not apply to a proxy: the upstream keeps its own state`},
		{[]string{"--upstream", "http://127.0.0.1:1", "--grpc"}, "labrun: --grpc does not apply to --upstream: --upstream serves the proxy"},
		{[]string{"--fault", "GET / delay=1s"}, "labrun: --fault needs --upstream"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"serve"}, tt.args...)...)
			if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2 and %q", got.code, got.stdout, got.stderr, tt.want)
			}
		})
	}
}
