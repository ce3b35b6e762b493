package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/internal/fakesrv"
)

// This file is labrun serve --upstream: the fault server as a proxy in front of a real
// service, its faults chosen by method and path (--fault, POST /labrun/faults).

// proxyNotes say why a flag does not apply to --upstream.
var proxyNotes = map[string]string{
	"idempotent": "the upstream keeps its own state",
	"h2":         "--upstream serves the proxy",
	"h2c":        "--upstream serves the proxy",
	"tls-faults": "--upstream serves the proxy",
	"grpc":       "--upstream serves the proxy",
	"storm":      "--upstream serves the proxy",
	"dns-delay":  "--upstream serves no DNS",
	"hosts-out":  "--upstream serves no DNS",
	"capacity":   "the upstream's capacity is its own",
	"service":    "the upstream's service time is its own",
}

// proxyHelp is what serve --upstream prints on stderr under its banner.
const proxyHelp = `fault rules (--fault, or POST /labrun/faults): METHOD PATH KEY=VALUE ...  (METHOD * for any; PATH ending in * for a prefix)
  delay=DUR|delay-dist=DIST  the upstream's answer held back
  stall=1 [max=DUR]     forwarded, then no answer until the client leaves (or max)
  fail=close|reset|stall  forwarded, then the connection closed (FIN) or reset (RST) unanswered, or stalled
  fail=CODE             answered CODE, not forwarded; fail-on=N: the N-th request of a connection only
  fail-rate=R seed=N    that share of the requests fails as fail says, by the seed's numbers
  every=DUR|bandwidth=N the upstream's body relayed a byte every DUR, or N bytes a second
  status=CODE [delay=]  answered CODE, not forwarded
control: GET /labrun/stats, POST /labrun/stats/reset, GET|POST|DELETE /labrun/faults (applies to connections already open)
`

// serveProxy is labrun serve --upstream.
func serveProxy(c *cli.Context, tty terminals) error {
	for _, name := range slices.Sorted(maps.Keys(proxyNotes)) {
		if c.IsSet(name) {
			return usagef("--%s does not apply to --upstream: %s", name, proxyNotes[name])
		}
	}
	up, err := fakesrv.ParseUpstream(c.String("upstream"), c.Bool("allow-remote"))
	var ae *fakesrv.AddrError
	switch {
	case errors.As(err, &ae):
		return usagef("--upstream %s: %v; pass --allow-remote to forward to it", c.String("upstream"), ae.Err)
	case err != nil:
		return usagef("--upstream: %v", err)
	}
	var rules []fakesrv.FaultRule
	if n := len(c.StringSlice("fault")); n > fakesrv.MaxFaultRules {
		return usagef("--fault: at most %d rules, got %d", fakesrv.MaxFaultRules, n)
	}
	for _, line := range c.StringSlice("fault") {
		r, err := fakesrv.ParseFaultRule(line)
		if err != nil {
			return usagef("--fault: %v", err)
		}
		rules = append(rules, r)
	}
	opts, err := serveOptions(c)
	if err != nil {
		return err
	}
	opts = append(opts, fakesrv.WithUpstream(up, rules...))
	if !c.Bool("quiet") {
		log := &requestLogger{w: c.App.ErrWriter, width: tty.errWidth}
		opts = append(opts, fakesrv.WithOnDone(log.done))
	}
	srv, err := fakesrv.New(opts...)
	if err != nil {
		return addrError(c.String("addr"), err)
	}
	if path := c.String("ca-out"); path != "" {
		if err := writeAtomic(path, srv.CACertPEM()); err != nil {
			srv.Close()
			return fmt.Errorf("--ca-out: %w", err)
		}
	}
	var banner strings.Builder
	fmt.Fprintf(&banner, "labrun: proxying %s to %s until Ctrl-C\n", srv.URL, c.String("upstream"))
	for _, r := range rules {
		fmt.Fprintf(&banner, "  fault: %s\n", r.Text)
	}
	banner.WriteString(indent(proxyHelp))
	return serveUntilStopped(c, srv.URL+"\n", banner.String(), "requests", srv.Shutdown)
}
