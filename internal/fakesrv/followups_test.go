package fakesrv

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestFlaky(t *testing.T) {
	s := newServer(t, WithMaxOrders(2))
	c, _ := newClient(t)
	for i, want := range []struct {
		path       string
		status     int
		retryAfter string
	}{
		{"/flaky/408?id=a&times=2&retry-after=0", 408, "0"},
		{"/flaky/408?id=a&times=2&retry-after=0", 408, "0"},
		{"/flaky/408?id=a&times=2&retry-after=0", 200, ""},
		{"/flaky/503?id=b", 503, ""}, // another conversation starts anew
		{"/flaky/503?id=b", 200, ""},
		{"/flaky/503?id=c", 507, ""}, // a third id is one too many
		{"/flaky/503", 400, ""},
		{"/flaky/503?id=a&times=0", 400, ""},
		{"/flaky/199?id=a", 400, ""},
		{"/flaky/503?id=a&retry-after=%01", 400, ""},
	} {
		resp, body := mustFetch(t, c, s, http.MethodGet, want.path, "")
		if resp.StatusCode != want.status || resp.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("request %d, %s: got %d Retry-After %q (%q), want %d Retry-After %q",
				i+1, want.path, resp.StatusCode, resp.Header.Get("Retry-After"), body, want.status, want.retryAfter)
		}
	}
	s.Reset()
	if resp, _ := mustFetch(t, c, s, http.MethodGet, "/flaky/503?id=c", ""); resp.StatusCode != 503 {
		t.Errorf("after Reset: got %d, want 503 (the conversations are forgotten)", resp.StatusCode)
	}
}

func TestMovedAndEcho(t *testing.T) {
	s := newServer(t)
	c := noRedirects(&http.Client{})
	host := strings.TrimPrefix(s.URL, "http://")
	for _, tt := range []struct {
		path, wantLocation string
		wantStatus         int
	}{
		{"/moved/307", "/echo", 307},
		{"/moved/302?call=7", "/echo?call=7", 302},
		{"/moved/308?to=/status/200&call=7", "/status/200?call=7", 308},
		{"/moved/301?to=http://" + host + "/echo", "http://" + host + "/echo", 301},
		{"/moved/300?to=https://127.0.0.1:1/echo", "https://127.0.0.1:1/echo", 300},
		{"/moved/304", "", 400},
		{"/moved/302?to=http://example.com/", "", 400}, // never to another host
		{"/moved/302?to=echo", "", 400},
		{"/moved/302?to=ftp://127.0.0.1/", "", 400},
	} {
		resp, body := mustFetch(t, c, s, http.MethodGet, tt.path, "")
		if resp.StatusCode != tt.wantStatus || resp.Header.Get("Location") != tt.wantLocation {
			t.Errorf("%s: got %d Location %q (%q), want %d Location %q", tt.path, resp.StatusCode, resp.Header.Get("Location"), body, tt.wantStatus, tt.wantLocation)
		}
	}
	s.Reset()
	resp, body := mustFetch(t, c, s, http.MethodPut, "/echo", "abc")
	if resp.StatusCode != 200 || body != "PUT with 3 body bytes\n" {
		t.Errorf("PUT /echo: got %d %q, want 200 %q", resp.StatusCode, body, "PUT with 3 body bytes\n")
	}
	log := s.Requests()
	if len(log) != 1 || log[0].Method != http.MethodPut || log[0].BodyBytes != 3 {
		t.Errorf("log: got %+v, want one PUT with 3 body bytes", log)
	}
}

func TestChallenge(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	for _, tt := range []struct {
		path, user                    string
		wantStatus                    int
		wantHeader, wantBody, wantVal string
	}{
		{"/challenge/401", "", 401, "WWW-Authenticate", "no Authorization\n", `Basic realm="labrun"`},
		{"/challenge/401", "a", 401, "WWW-Authenticate", "Authorization refused\n", `Basic realm="labrun"`},
		{"/challenge/407", "", 407, "Proxy-Authenticate", "no Proxy-Authorization\n", `Basic realm="labrun"`},
		{"/challenge/403", "", 400, "", "", ""},
	} {
		req, err := http.NewRequest(http.MethodGet, s.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.user != "" {
			req.SetBasicAuth(tt.user, "b")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: read body: %v", tt.path, err)
		}
		b := string(data)
		if resp.StatusCode != tt.wantStatus || (tt.wantHeader != "" && (resp.Header.Get(tt.wantHeader) != tt.wantVal || b != tt.wantBody)) {
			t.Errorf("%s (user %q): got %d %s %q body %q, want %d %q body %q", tt.path, tt.user, resp.StatusCode,
				tt.wantHeader, resp.Header.Get(tt.wantHeader), b, tt.wantStatus, tt.wantVal, tt.wantBody)
		}
	}
}
