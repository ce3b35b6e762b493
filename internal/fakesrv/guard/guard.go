// Package guard keeps web pages away from the control endpoints of labrun's loopback servers
// (the fault server's /stats and /stats/reset, the HTTP/2 nodes' /stats, /freeze and /thaw).
//
// A server on 127.0.0.1 is reachable from any page a browser on the same machine opens. Two
// tricks let such a page use it: DNS rebinding (a name of the attacker's that resolves to
// 127.0.0.1 after the page loaded: the browser then sends the page's own name as Host, and
// lets the page read the answers) and cross-origin "simple" requests (a form or a fetch in
// no-cors mode: the page cannot read the answer, but the POST takes effect). So a control
// endpoint answers only a Host that names the address the connection came in on, localhost
// or a name the server was told of; and an endpoint that changes state refuses a request
// from another origin and the content types a browser may send cross-origin without asking
// first (application/x-www-form-urlencoded, multipart/form-data, text/plain).
//
// Considered and rejected: a token in the URL (every script and doc would have to carry it)
// and checking Host against the listen address (a server listening on 0.0.0.0 would then
// refuse its own addresses): the connection's local address says which address the client
// dialled, whatever the listener.
package guard

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Host returns an error unless r's Host names the IP address r's connection arrived on, a
// localhost name (localhost, *.localhost), or one of names (case-insensitive). Without a
// local address (a handler called directly), any loopback IP address is accepted.
func Host(r *http.Request, names ...string) error {
	if r.Host == "" {
		return errors.New("a Host header is required")
	}
	if !hostAllowed(r, r.Host, names) {
		return fmt.Errorf("the Host %q is not this server's address: control endpoints answer only an IP address of the server or localhost", r.Host)
	}
	return nil
}

// Change is Host for an endpoint that changes state. It also refuses a request from another
// origin (an Origin header that is not the server's own, a Sec-Fetch-Site of another site)
// and the content types a browser sends cross-origin without a preflight.
func Change(r *http.Request, names ...string) error {
	if err := Host(r, names...); err != nil {
		return err
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Errorf("the Origin %q is not this server: control endpoints refuse cross-origin requests", o)
		}
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("a Sec-Fetch-Site of %q: control endpoints refuse cross-origin requests", site)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return fmt.Errorf("the Content-Type %q is malformed", ct)
		case mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" || mt == "text/plain":
			return fmt.Errorf("the Content-Type %s is refused: a web form can send it from any page; send no body or application/json", mt)
		}
	}
	return nil
}

// hostAllowed applies Host's rule to hostport.
func hostAllowed(r *http.Request, hostport string, names []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, n := range names {
		if strings.EqualFold(strings.TrimSuffix(n, "."), host) {
			return true
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ip.IsLoopback()
	}
	lp, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return ip.IsLoopback()
	}
	return lp.Addr().Unmap().WithZone("") == ip
}
