// Package guard keeps web pages away from the control endpoints of labrun's loopback servers.
// A page in a browser on the same machine can reach them by DNS rebinding (its own name,
// resolving to 127.0.0.1, as Host) or by a cross-origin "simple" request (a form's POST). So a
// control endpoint answers only a Host naming the address the connection came in on, localhost
// or a name the server was told of, and one that changes state also refuses another origin and
// the content types a browser sends cross-origin without asking (docs/serve.md).
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

// Host returns an error unless r's Host names the address r's connection arrived on, a
// localhost name or one of names; without a local address, any loopback IP.
func Host(r *http.Request, names ...string) error {
	if r.Host == "" {
		return errors.New("a Host header is required")
	}
	if !hostAllowed(r, r.Host, names) {
		return fmt.Errorf("the Host %q is not this server's address: control endpoints answer only an IP address of the server or localhost", r.Host)
	}
	return nil
}

// Change is Host for an endpoint that changes state, refusing also another origin and the
// content types a browser sends cross-origin without a preflight.
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
