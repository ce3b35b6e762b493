package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
)

// TestServeTLSFaults: labrun serve --tls-faults prints one line per listener and the DNS
// server, writes the CA and a hosts file, and each name behaves as its fault says.
func TestServeTLSFaults(t *testing.T) {
	dir := t.TempDir()
	caPath, hostsPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "hosts")
	s := startServe(t, "--tls-faults", "--addr", "127.0.13.1:0", "--ca-out", caPath, "--hosts-out", hostsPath)
	lines := map[string][]string{}
	for _, l := range strings.Split(s.url, "\n") {
		f := strings.Fields(l)
		lines[f[0]] = f[1:]
	}
	for _, name := range []string{"good", "stall", "unknown-ca", "wrong-host", "expired", "incomplete-chain", "tls1.0", "mixed", "dns"} {
		if _, ok := lines[name]; !ok {
			t.Fatalf("no line %q in stdout %q", name, s.url)
		}
	}
	if got := lines["good"][1]; got != "127.0.13.1" {
		t.Errorf("good at %s, want 127.0.13.1, the first address from --addr", got)
	}
	pem, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("--ca-out holds no certificate: %q", pem)
	}
	hosts, err := os.ReadFile(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hosts), lines["wrong-host"][1]+" mixed.labrun.test\n"+lines["good"][1]+" mixed.labrun.test\n") {
		t.Errorf("hosts file %q lacks mixed.labrun.test's two addresses in order", hosts)
	}
	dnsAddr := lines["dns"][0]
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dnsAddr)
	}}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: (&net.Dialer{Resolver: resolver, Timeout: 5 * time.Second}).DialContext, TLSHandshakeTimeout: 200 * time.Millisecond}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	get := func(name string) error {
		resp, err := hc.Get(lines[name][0])
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
	if err := get("good"); err != nil {
		t.Errorf("good: %v", err)
	}
	var host x509.HostnameError
	if err := get("mixed"); !errors.As(err, &host) {
		t.Errorf("mixed: got %v, want the first address's wrong host name (net/http tries one address)", err)
	}
	var unknown x509.UnknownAuthorityError
	if err := get("unknown-ca"); !errors.As(err, &unknown) {
		t.Errorf("unknown-ca: got %v, want an unknown authority", err)
	}
	if err := get("stall"); err == nil || !strings.Contains(err.Error(), "TLS handshake timeout") {
		t.Errorf("stall: got %v, want the handshake timeout", err)
	}
	var de *net.DNSError
	if _, err := resolver.LookupHost(t.Context(), "servfail.labrun.test"); !errors.As(err, &de) || de.IsNotFound {
		t.Errorf("servfail: got %v, want SERVFAIL", err)
	}
	if _, err := resolver.LookupHost(t.Context(), "nosuch.labrun.test"); !errors.As(err, &de) || !de.IsNotFound {
		t.Errorf("nosuch: got %v, want NXDOMAIN", err)
	}
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0; stderr %q", code, s.stderr.String())
	}
}

// TestServeTLSFaultsRefuses: the flags of --tls-faults need it, and the fault server's flags
// that do not apply are refused, each with exit 2 and a line naming the flag.
func TestServeTLSFaultsRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dns-delay", "1s"}, "--dns-delay needs --tls-faults"},
		{[]string{"--hosts-out", "h"}, "--hosts-out needs --tls-faults"},
		{[]string{"--tls-faults", "--protocol", "h2"}, "--protocol does not apply to --tls-faults"},
		{[]string{"--tls-faults", "--addr", "[::1]:0"}, "needs an IPv4 loopback address"},
		{[]string{"--tls-faults", "--dns-delay", "-1s"}, "--dns-delay must not be negative"},
		{[]string{"--tls-faults", "--nodes", "2"}, "--nodes needs --h2 or --h2c"},
	} {
		var stdout, stderr syncBuffer
		code := runContext(t.Context(), append([]string{"labrun", "serve"}, tc.args...), &stdout, &stderr, terminals{}, experiments.All())
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.String() != "" {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
