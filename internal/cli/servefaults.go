package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/internal/fakesrv"
)

// This file is labrun serve --tls-faults: the faults before the first byte. One TLS listener
// per fault (fakesrv.TLSFaultNames) on consecutive loopback addresses from --addr's, one port,
// and a loopback DNS server that names them, for clients in any language.

// faultDomain is the domain of the names the DNS server and the hosts file give the listeners.
const faultDomain = "labrun.test"

// The names of --tls-faults beside one per fault: a host whose first address has a wrong-host
// certificate and the second a good one, and a name the DNS server answers SERVFAIL.
const (
	faultMixed    = "mixed"
	faultServFail = "servfail"
)

// faultNotes say why a flag of the fault server does not apply to --tls-faults.
var faultNotes = map[string]string{
	"protocol":               "the listeners speak HTTPS (HTTP/1.1) after a handshake that succeeds",
	"idempotent":             "they reserve nothing",
	"allow-remote":           "the listeners and the DNS server listen on loopback only",
	"max-concurrent-streams": "the listeners speak HTTP/1.1",
	"h2":                     "--tls-faults starts its own listeners",
	"h2c":                    "--tls-faults starts its own listeners",
}

// faultHost is the name of a --tls-faults listener: "stall.labrun.test".
func faultHost(name string) string { return name + "." + faultDomain }

// faultPlan checks --tls-faults' flags and returns the listeners' addresses, one per fault
// in fakesrv.TLSFaultNames' order, and their port ("0": any free one).
func faultPlan(c *cli.Context) (ips []netip.Addr, port int, err error) {
	if c.Args().Present() {
		return nil, 0, usagef("serve takes no arguments, got %q", c.Args().First())
	}
	if err := checkServeCommon(c); err != nil {
		return nil, 0, err
	}
	for _, name := range slices.Sorted(maps.Keys(faultNotes)) {
		if c.IsSet(name) {
			return nil, 0, usagef("--%s does not apply to --tls-faults: %s", name, faultNotes[name])
		}
	}
	for _, name := range serveNodeFlags {
		if c.IsSet(name) {
			return nil, 0, usagef("--%s needs --h2 or --h2c", name)
		}
	}
	maxDur, _, err := durationLimits(c)
	if err != nil {
		return nil, 0, err
	}
	switch d := c.Duration("dns-delay"); {
	case d < 0:
		return nil, 0, usagef("--dns-delay must not be negative, got %v", d)
	case d > maxDur:
		return nil, 0, usagef("--dns-delay must not exceed --max-duration (%v), got %v", maxDur, d)
	}
	for _, name := range []string{"ca-out", "hosts-out"} {
		if c.IsSet(name) && c.String(name) == "" {
			return nil, 0, usagef("--%s needs a file name", name)
		}
	}
	addr := c.String("addr")
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, usagef("--addr %s: %v", addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return nil, 0, usagef("--addr %s: bad port %q", addr, p)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().Is4() || !ip.Unmap().IsLoopback() {
		return nil, 0, usagef("--addr %s: --tls-faults needs an IPv4 loopback address: its listeners take consecutive addresses of 127.0.0.0/8", addr)
	}
	ip = ip.Unmap()
	for range fakesrv.TLSFaultNames() {
		if !ip.IsValid() || !ip.IsLoopback() {
			return nil, 0, usagef("--addr %s: the %d listeners of --tls-faults leave 127.0.0.0/8", addr, len(fakesrv.TLSFaultNames()))
		}
		ips = append(ips, ip)
		ip = ip.Next()
	}
	return ips, port, nil
}

// faultLab is what --tls-faults runs.
type faultLab struct {
	listeners []*fakesrv.TLSFaultServer
	dns       *fakesrv.DNS
	records   map[string][]string // host name -> addresses, as the DNS server and the hosts file give them
}

// shutdown stops every listener and the DNS server; the context is not needed: nothing is in
// flight but handshakes and one-line answers, which are cut.
func (l *faultLab) shutdown(context.Context) error {
	var errs []error
	for _, s := range l.listeners {
		errs = append(errs, s.Close())
	}
	if l.dns != nil {
		errs = append(errs, l.dns.Close())
	}
	return errors.Join(errs...)
}

// hostsFile renders the records as a hosts file ("IP name" lines, a name with several
// addresses on several lines, in order): -Djdk.net.hosts.file's format and /etc/hosts'.
func (l *faultLab) hostsFile() []byte {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(l.records)) {
		for _, ip := range l.records[name] {
			fmt.Fprintf(&b, "%s %s\n", ip, name)
		}
	}
	return []byte(b.String())
}

// serveFaults is labrun serve --tls-faults.
func serveFaults(c *cli.Context) error {
	ips, port, err := faultPlan(c)
	if err != nil {
		return err
	}
	names := fakesrv.TLSFaultNames()
	hosts := append([]string{faultHost(faultMixed)}, c.StringSlice("tls-name")...)
	for _, f := range names {
		hosts = append(hosts, faultHost(string(f)))
	}
	faults, err := fakesrv.NewTLSFaults(hosts...)
	if err != nil {
		return err
	}
	maxDur, idle, _ := durationLimits(c) // checked by faultPlan
	if faults, err = faults.WithLimits(fakesrv.TLSLimits{MaxDuration: maxDur, IdleTimeout: idle}); err != nil {
		return err
	}
	lab := &faultLab{records: map[string][]string{}}
	for i, f := range names {
		s, err := faults.Listen(f, ips[i].String(), port)
		if err != nil {
			_ = lab.shutdown(cancelled())
			return addrError(c.String("addr"), err)
		}
		lab.listeners = append(lab.listeners, s)
		port = portOf(s.Addr)
		lab.records[faultHost(string(f))] = []string{ips[i].String()}
	}
	byFault := func(f fakesrv.TLSFault) string { return ips[slices.Index(names, f)].String() }
	lab.records[faultHost(faultMixed)] = []string{byFault(fakesrv.TLSWrongHost), byFault(fakesrv.TLSGood)}
	lab.dns, err = fakesrv.NewDNS(lab.records, fakesrv.DNSDelay(c.Duration("dns-delay")), fakesrv.DNSServFail(faultHost(faultServFail)))
	if err != nil {
		_ = lab.shutdown(cancelled())
		return err
	}
	var ca caFile
	if err := ca.write(c.String("ca-out"), faults.CAPEM()); err != nil {
		_ = lab.shutdown(cancelled())
		return err
	}
	defer ca.remove()
	if path := c.String("hosts-out"); path != "" {
		if err := writeAtomic(path, lab.hostsFile()); err != nil {
			_ = lab.shutdown(cancelled())
			return fmt.Errorf("--hosts-out: %w", err)
		}
	}

	var out, banner strings.Builder
	fmt.Fprintf(&banner, "labrun: serving the faults before the first byte until Ctrl-C\n")
	for i, f := range names {
		u := fmt.Sprintf("https://%s:%d/", faultHost(string(f)), port)
		fmt.Fprintf(&out, "%s %s %s\n", f, u, ips[i])
		fmt.Fprintf(&banner, "  %-16s %s (%s)\n", f, u, ips[i])
	}
	fmt.Fprintf(&out, "%s https://%s:%d/ %s\n", faultMixed, faultHost(faultMixed), port, strings.Join(lab.records[faultHost(faultMixed)], ","))
	fmt.Fprintf(&out, "dns %s\n", lab.dns.Addr)
	fmt.Fprintf(&banner, "  %-16s https://%s:%d/ (%s: a wrong-host certificate, then a good one)\n", faultMixed, faultHost(faultMixed), port,
		strings.Join(lab.records[faultHost(faultMixed)], ", "))
	fmt.Fprintf(&banner, "  DNS server: %s (UDP; %s answers SERVFAIL, any other unknown name NXDOMAIN", lab.dns.Addr, faultHost(faultServFail))
	if d := c.Duration("dns-delay"); d > 0 {
		fmt.Fprintf(&banner, "; every answer after %v", d)
	}
	fmt.Fprintf(&banner, ")\n  CA certificate: %s (curl --cacert %s --resolve stall.%s:%d:%s URL)\n", ca.path, ca.path, faultDomain, port, ips[slices.Index(names, fakesrv.TLSStall)])
	if path := c.String("hosts-out"); path != "" {
		fmt.Fprintf(&banner, "  hosts file: %s (java -Djdk.net.hosts.file=%s)\n", path, path)
	}
	return serveUntilStopped(c, out.String(), banner.String(), "handshakes", lab.shutdown)
}

// portOf is the port of "ip:port".
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
