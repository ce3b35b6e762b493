package fakesrv

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestNotFound(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	paths := []string{"/", "/nope", "/reserve/", "/delay/1", "/stats/x", "/redirect-loop/x", "/resets", "/Stall"}
	for i, p := range paths {
		resp, body := mustFetch(t, c, s, "GET", p, "")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: got status %d, want 404", p, resp.StatusCode)
		}
		if want := notFoundBody(endpointTable()) + "\n"; body != want {
			t.Errorf("%s: got body %q, want %q", p, body, want)
		}
		if got := waitFinished(t, s, i+1); got.Endpoint != "other" {
			t.Errorf("%s: got Endpoint %q, want other", p, got.Endpoint)
		}
	}
	if got, want := s.Stats().Requests["other"], len(paths); got != want {
		t.Errorf("Stats other: got %d, want %d", got, want)
	}
}

func TestParameterValidation(t *testing.T) {
	tests := []struct {
		path     string
		endpoint string
		want     string
	}{
		{"/reserve", "reserve", "order: required"},
		{"/reserve?delay=1s&call=1", "reserve", "order: required"},
		{"/reserve?order=", "reserve", "order: required"},
		{"/reserve?order=1&delay=x", "reserve", `delay must be a duration such as 250ms, 2s or 1m30s, got "x"`},
		{"/reserve?order=1&idempotent=yes", "reserve", `idempotent: unknown boolean "yes", want 1, true, 0 or false`},
		{"/trickle?bytes=-1&every=1ms", "trickle", `bytes must be a whole number from 0 to 1048576, got "-1"`},
		{"/trickle?bytes=1&every=soon", "trickle", `every must be a duration such as 250ms, 2s or 1m30s, got "soon"`},
		{"/stall?max=x", "stall", `max must be a duration such as 250ms, 2s or 1m30s, got "x"`},
		{"/stall?max=-1s", "stall", "max must not be negative, got -1s"},
		{"/delay?delay=5", "delay", `delay must be a duration such as 250ms, 2s or 1m30s, got "5"`},
		{"/status", "status", `status: CODE must be a whole number between 101 and 599, got ""`},
		{"/status/", "status", `status: CODE must be a whole number between 101 and 599, got ""`},
		{"/status/100", "status", `status: CODE must be a whole number between 101 and 599, got "100"`},
		{"/status/600", "status", `status: CODE must be a whole number between 101 and 599, got "600"`},
		{"/status/ok", "status", `status: CODE must be a whole number between 101 and 599, got "ok"`},
		{"/status/+200", "status", `status: CODE must be a whole number between 101 and 599, got "+200"`},
		{"/status/200/x", "status", `status: CODE must be a whole number between 101 and 599, got "200/x"`},
		{"/status/99999999999999999999", "status", `status: CODE must be a whole number between 101 and 599, got "99999999999999999999"`},
		{"/status/503?delay=-1s", "status", "delay must not be negative, got -1s"},
		{"/status/503?delay=1", "status", `delay must be a duration such as 250ms, 2s or 1m30s, got "1"`},
		{"/status/503?retry-after=", "status", "retry-after must not be empty"},
		{"/status/503?retry-after=%01", "status", `retry-after must be printable ASCII, got "\x01"`},
		{"/status/503?retry-after=1%0D%0AX:1", "status", `retry-after must be printable ASCII, got "1\r\nX:1"`},
		{"/status/503?retry-after=%C3%A9", "status", `retry-after must be printable ASCII, got "é"`},
		{"/status/503?retry-after=+120", "status", `retry-after must not start or end with a space, got " 120"`},
		{"/redirect", "redirect", `redirect: N must be a whole number between 0 and 100, got ""`},
		{"/redirect/101", "redirect", `redirect: N must be a whole number between 0 and 100, got "101"`},
		{"/redirect/-1", "redirect", `redirect: N must be a whole number between 0 and 100, got "-1"`},
		{"/redirect/two", "redirect", `redirect: N must be a whole number between 0 and 100, got "two"`},
	}
	s := newServer(t)
	c, _ := newClient(t)
	for i, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := mustFetch(t, c, s, "GET", tt.path, "")
			if got, want := resp.StatusCode, http.StatusBadRequest; got != want {
				t.Errorf("status: got %d, want %d", got, want)
			}
			if got, want := body, tt.want+"\n"; got != want {
				t.Errorf("body: got %q, want %q", got, want)
			}
			got := waitFinished(t, s, i+1)
			if got.Endpoint != tt.endpoint || got.Status != http.StatusBadRequest || got.Path != tt.path {
				t.Errorf("log: got %s %s %d, want %s %s 400", got.Endpoint, got.Path, got.Status, tt.endpoint, tt.path)
			}
		})
	}
	if got, want := s.TotalReservations(), 0; got != want {
		t.Errorf("TotalReservations: got %d, want %d", got, want)
	}
}

func TestEndpointGrammar(t *testing.T) {
	tests := []struct {
		path, methods, grammar string
	}{
		{"/reserve", "ANY", "/reserve?order=ID[&delay=DUR][&idempotent=0|1][&fail=close|reset|stall|CODE][&fail-on=N][&fail-rate=R][&seed=N][&delay-dist=DIST][&bandwidth=N]"},
		{"/trickle", "ANY", "/trickle[?bytes=N][&every=DUR][&delay=DUR][&delay-dist=DIST][&bandwidth=N]"},
		{"/stall", "ANY", "/stall[?max=DUR]"},
		{"/delay", "ANY", "/delay[?delay=DUR][&bytes=N][&fail=close|reset|stall|CODE][&fail-on=N][&fail-rate=R][&seed=N][&delay-dist=DIST][&bandwidth=N]"},
		{"/status/CODE", "ANY", "/status/CODE[?retry-after=VALUE][&delay=DUR]"},
		{"/redirect/N", "ANY", "/redirect/N"},
		{"/stats", "GET|HEAD", "/stats"},
		{"/stats/reset", "POST", "/stats/reset"},
	}
	eps := Endpoints()
	for _, tt := range tests {
		i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Path == tt.path })
		if i < 0 {
			t.Errorf("no endpoint %s", tt.path)
			continue
		}
		if got := eps[i].MethodList(); got != tt.methods {
			t.Errorf("%s MethodList: got %q, want %q", tt.path, got, tt.methods)
		}
		if got := eps[i].Grammar(); got != tt.grammar {
			t.Errorf("%s Grammar: got %q, want %q", tt.path, got, tt.grammar)
		}
	}
}

func TestRoute(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/reserve", "reserve"},
		{"/stall", "stall"},
		{"/status", "status"},
		{"/status/", "status"},
		{"/status/503", "status"},
		{"/status/503/x", "status"},
		{"/statusx", "other"},
		{"/redirect", "redirect"},
		{"/redirect/3", "redirect"},
		{"/redirect-loop", "redirect-loop"},
		{"/redirect-loop/x", "other"},
		{"/stats", "stats"},
		{"/stats/reset", "stats"},
		{"/stats/x", "other"},
		{"/", "other"},
		{"/RESET", "other"},
	}
	routes := endpointTable()
	for _, tt := range tests {
		e, ok := route(routes, tt.path)
		got := e.Name
		if !ok {
			got = otherEndpoint
		}
		if got != tt.want {
			t.Errorf("route(%q): got %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestEndpointTable checks the table itself: what the generated help and manual rely on.
func TestEndpointTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Endpoints() {
		if seen[e.Path] {
			t.Errorf("%s: listed twice", e.Path)
		}
		seen[e.Path] = true
		if e.serve == nil {
			t.Errorf("%s: no handler", e.Path)
		}
		if e.Summary == "" || len(e.Summary) > 70 || strings.HasSuffix(e.Summary, ".") {
			t.Errorf("%s: summary %q, want one short line without a full stop", e.Path, e.Summary)
		}
		if e.Details == "" || !strings.HasSuffix(e.Details, ".") {
			t.Errorf("%s: details %q, want sentences", e.Path, e.Details)
		}
		if len(e.Examples) == 0 {
			t.Errorf("%s: no curl example", e.Path)
		}
		for _, ex := range e.Examples {
			if !strings.HasPrefix(ex.Command, "curl ") || !strings.Contains(ex.Command, `"$U`+e.Path[:strings.LastIndexByte(e.Path, '/')+1]) || ex.Shows == "" {
				t.Errorf("%s: example %+v, want a curl command on $U%s and what it shows", e.Path, ex, e.Path)
			}
		}
		for _, p := range e.Params {
			if !slices.Contains([]string{InPath, InQuery, InHeader}, p.In) || p.Meaning == "" || p.Value == "" {
				t.Errorf("%s: parameter %+v, want a place, a value form and a meaning", e.Path, p)
			}
			if p.In == InPath && !strings.HasSuffix(e.Path, "/"+p.Name) {
				t.Errorf("%s: path parameter %s is not its last segment", e.Path, p.Name)
			}
		}
		if !slices.Contains(endpointNames(endpointTable()), e.Name) {
			t.Errorf("%s: name %q missing from the endpoint names", e.Path, e.Name)
		}
	}
	if got := notFoundBody(endpointTable()); !strings.HasPrefix(got, "no such endpoint; endpoints: /reserve ") || strings.Contains(got, "\n") {
		t.Errorf("404 body %q, want one line listing the paths", got)
	}
}
