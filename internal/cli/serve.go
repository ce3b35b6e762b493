package cli

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/fakesrv"
)

//go:generate go test -run ^TestServeManual$ -update-serve-doc .

// defaultGrace is how long labrun serve lets requests in flight finish after SIGINT or
// SIGTERM before it cuts them (--grace).
const defaultGrace = 5 * time.Second

// The bounds of a long-running labrun serve's request log; /stats counts every request
// whatever they drop, and says how many entries they dropped.
const (
	serveLogLimit = 10_000  // entries
	serveLogBytes = 8 << 20 // bytes, counting paths and order ids (fakesrv.WithLogBytes)
)

// serveScript is the way to start labrun serve from a script and read its URL; serve --help
// and docs/serve.md show it, and TestServeScript runs it.
const serveScript = `rm -f url.txt; labrun serve --url-file url.txt >/dev/null 2>&1 & pid=$!
until [ -s url.txt ]; do sleep 0.1; done; U=$(cat url.txt)
curl -s "$U/stats"; kill $pid; wait $pid`

// serveFlags are labrun serve's flags; docs/serve.md's flag table is generated from them.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: fakesrv.DefaultAddr, Usage: "listen address (port 0: any free port)"},
		&cli.BoolFlag{Name: "allow-remote", Usage: "allow a listen address that is not loopback"},
		&cli.DurationFlag{Name: "max-duration", Value: fakesrv.DefaultMaxDuration,
			Usage: "cap on every delay, stall and trickle, and on the time a client may take to send a request"},
		&cli.DurationFlag{Name: "idle-timeout", DefaultText: "--max-duration",
			Usage: "close keep-alive connections idle this long (--h2/--h2c: connections without a stream, default " + h2node.DefaultIdleTimeout.String() + ")"},
		&cli.DurationFlag{Name: "grace", Value: defaultGrace,
			Usage: "on a stop signal, how long requests in flight may finish before they are cut"},
		&cli.StringFlag{Name: "url-file", Usage: "write the URL (--h2/--h2c: stdout's lines) to this file once listening, whole; removed on exit"},
		&cli.BoolFlag{Name: "idempotent", Usage: "deduplicate every reservation by order id"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no line per request on stderr"},
		&cli.StringFlag{Name: "protocol", Value: string(fakesrv.HTTP1), Usage: "protocol: " + protocolHelp()},
		&cli.IntFlag{Name: "max-concurrent-streams", Usage: "SETTINGS_MAX_CONCURRENT_STREAMS advertised over HTTP/2 (0: 250, net/http's default, also --grpc's; --h2 and --h2c nodes: 100)"},
		&cli.StringSliceFlag{Name: "tls-name", Usage: "a host name or IP address for the certificate, besides 127.0.0.1, ::1 and localhost (repeatable)"},
		&cli.StringFlag{Name: "ca-out", Usage: "write the CA certificate (PEM) to this file, for clients to trust (TLS protocols, --h2)"},
		&cli.BoolFlag{Name: "h2", Usage: "instead of the fault server, HTTP/2 nodes over TLS (APNs-like); the CA goes to --ca-out or a temporary file, whose path is printed"},
		&cli.BoolFlag{Name: "h2c", Usage: "the same nodes over h2c (prior knowledge)"},
		&cli.IntFlag{Name: "nodes", Value: 1, Usage: "--h2/--h2c: nodes on consecutive loopback addresses from --addr's, one port"},
		&cli.DurationFlag{Name: "latency", Usage: "--h2/--h2c: every node's answer time"},
		&cli.DurationFlag{Name: "slow-latency", Usage: "--h2/--h2c: the answer time of node --slow-node once it has answered --slow-after requests (0: no slow node)"},
		&cli.IntFlag{Name: "slow-node", Value: 1, Usage: "--h2/--h2c: the node that turns slow, from 1"},
		&cli.IntFlag{Name: "slow-after", Usage: "--h2/--h2c: requests the slow node answers at --latency first"},
		&cli.BoolFlag{Name: "throttle", Usage: "--h2/--h2c: the APNs throttle: after a 400, a stream limit of 1 until a success"},
		&cli.BoolFlag{Name: "tls-faults", Usage: "instead, TLS faults before the first byte, and DNS"},
		&cli.DurationFlag{Name: "dns-delay", Usage: "--tls-faults: every DNS answer this late"},
		&cli.StringFlag{Name: "hosts-out", Usage: "--tls-faults: write their names as a hosts file"},
		&cli.BoolFlag{Name: "grpc", Usage: "instead, the gRPC fault server (h2c)"},
		&cli.DurationFlag{Name: "keepalive-min-time", Value: grpcsrv.DefaultKeepaliveMinTime,
			Usage: "--grpc: the shortest interval between a client's pings; the third ping sooner gets GOAWAY ENHANCE_YOUR_CALM too_many_pings (grpc-go's rule)"},
		&cli.BoolFlag{Name: "keepalive-permit-without-stream", Usage: "--grpc: allow pings every --keepalive-min-time without a call in flight (else one per 2 hours)"},
		&cli.StringFlag{Name: "upstream", Usage: "instead, a proxy to this URL (http://, https:// or h2c://host:port; loopback unless --allow-remote) with the fault rules of --fault"},
		&cli.StringSliceFlag{Name: "fault", Usage: "--upstream: a fault rule, 'METHOD PATH KEY=VALUE ...' such as 'POST /orders delay=2s' (repeatable; docs/serve.md)"},
		&cli.BoolFlag{Name: "storm", Usage: "instead, a downstream of fixed capacity that a retry storm can beat (exp-n's)"},
		&cli.IntFlag{Name: "capacity", Value: 20, Usage: "--storm: requests served at once"},
		&cli.DurationFlag{Name: "service", Value: 100 * time.Millisecond, Usage: "--storm: the time each takes"},
	}
}

// serveNodeFlags are the flags that apply only to --h2 and --h2c nodes.
var serveNodeFlags = []string{"nodes", "latency", "slow-latency", "slow-node", "slow-after", "throttle"}

// maxServeNodes bounds --nodes: a service behind one name, not a /24.
const maxServeNodes = 16

// protocolHelp lists the protocols with what each speaks.
func protocolHelp() string {
	var parts []string
	for _, p := range fakesrv.Protocols() {
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, p.Description))
	}
	return strings.Join(parts, ", ")
}

// endpointList renders the endpoint table as labrun serve prints it on stderr and in its
// help: one aligned line per endpoint, methods, grammar and summary.
func endpointList(eps []fakesrv.Endpoint) string {
	methodsW, grammarW := 0, 0
	for _, e := range eps {
		methodsW = max(methodsW, len(e.MethodList()))
		grammarW = max(grammarW, len(e.Grammar()))
	}
	var b strings.Builder
	b.WriteString("endpoints (DUR: a duration such as 250ms; see docs/serve.md):\n")
	for _, e := range eps {
		fmt.Fprintf(&b, "  %-*s %-*s  %s\n", methodsW, e.MethodList(), grammarW, e.Grammar(), e.Summary)
	}
	return b.String()
}

// endpointPaths lists the endpoints' paths, for serve's banner: "/reserve /trickle ...".
func endpointPaths(eps []fakesrv.Endpoint) string {
	paths := make([]string, len(eps))
	for i, e := range eps {
		paths[i] = e.Path
	}
	return strings.Join(paths, " ")
}

func serveCommand(tty terminals) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the fault server for HTTP clients in any language",
		Description: "Serves labrun's fake server until a stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT): " +
			"the URL on stdout, the endpoints on stderr. It binds loopback " +
			"only unless --allow-remote is given; --max-duration caps every duration a request asks " +
			"for. On a stop signal, requests in flight get --grace to finish (a second signal cuts " +
			"them): exit 0 when all did, 130 when some were cut. The manual, with recipes for curl, " +
			"Python, Node, the JVM, gRPC: docs/serve.md.\n\n" +
			endpointListFor(fakesrv.Endpoints(), cmp.Or(tty.outWidth, helpWidth)-3) + "\n" +
			"Examples:\n   labrun serve\n   labrun serve --addr 127.0.0.1:8080 --max-duration 1m\n" +
			"   labrun serve --protocol h2 --ca-out ca.pem   # curl --cacert ca.pem URL\n" +
			"   labrun serve --h2c --nodes 3 --latency 200ms --throttle   # docs/http2.md\n" +
			"   labrun serve --tls-faults --hosts-out hosts   # docs/serve.md\n\n" +
			"In a script, read the URL from --url-file, written whole once the server listens and removed when it exits:\n   " +
			strings.ReplaceAll(serveScript, "\n", "\n   "),
		Flags:        serveFlags(),
		OnUsageError: onUsageError,
		Action:       func(c *cli.Context) error { return serve(c, tty) },
	}
}

// serve is labrun serve's action; tty says whether stderr is a terminal, and its width.
func serve(c *cli.Context, tty terminals) error {
	for _, name := range serveGRPCFlags {
		if c.IsSet(name) && !c.Bool("grpc") {
			return usagef("--%s needs --grpc", name)
		}
	}
	if c.IsSet("upstream") {
		return serveProxy(c, tty)
	}
	if c.IsSet("fault") {
		return usagef("--fault needs --upstream")
	}
	if c.Bool("storm") {
		return serveStorm(c)
	}
	for _, name := range serveStormFlags {
		if c.IsSet(name) {
			return usagef("--%s needs --storm", name)
		}
	}
	if c.Bool("grpc") {
		return serveGRPC(c, tty)
	}
	if c.Bool("tls-faults") {
		return serveFaults(c)
	}
	for _, name := range []string{"dns-delay", "hosts-out"} {
		if c.IsSet(name) {
			return usagef("--%s needs --tls-faults", name)
		}
	}
	if c.Bool("h2") || c.Bool("h2c") {
		return serveNodes(c)
	}
	opts, err := serveOptions(c)
	if err != nil {
		return err
	}
	if !c.Bool("quiet") {
		log := &requestLogger{w: c.App.ErrWriter, width: tty.errWidth}
		opts = append(opts, fakesrv.WithOnDone(log.done))
	}
	srv, err := fakesrv.New(opts...)
	if err != nil {
		return addrError(c.String("addr"), err)
	}
	if path := c.String("ca-out"); path != "" {
		if err := os.WriteFile(path, srv.CACertPEM(), 0o644); err != nil {
			srv.Close()
			return fmt.Errorf("--ca-out: %w", err)
		}
	}
	banner := serveBanner(srv.URL, fakesrv.Endpoints(), tty.errWidth)
	return serveUntilStopped(c, srv.URL+"\n", banner, "requests", srv.Shutdown)
}

// serveOptions checks labrun serve's arguments and flags and turns them into the fake
// server's options. The listen address is checked by fakesrv.New.
func serveOptions(c *cli.Context) ([]fakesrv.Option, error) {
	if c.Args().Present() {
		return nil, usagef("serve takes no arguments, got %q", c.Args().First())
	}
	for _, name := range serveNodeFlags {
		if c.IsSet(name) {
			return nil, usagef("--%s needs --h2 or --h2c", name)
		}
	}
	if err := checkServeCommon(c); err != nil {
		return nil, err
	}
	maxDur, idle, err := durationLimits(c)
	if err != nil {
		return nil, err
	}
	proto, err := serveProtocol(c)
	if err != nil {
		return nil, err
	}
	return []fakesrv.Option{
		fakesrv.WithAddr(c.String("addr")),
		fakesrv.WithAllowRemote(c.Bool("allow-remote")),
		fakesrv.WithMaxDuration(maxDur),
		fakesrv.WithIdempotent(c.Bool("idempotent")),
		fakesrv.WithProtocol(proto.Name),
		fakesrv.WithMaxConcurrentStreams(c.Int("max-concurrent-streams")),
		fakesrv.WithTLSNames(c.StringSlice("tls-name")...),
		// Safe to leave running: bounded memory, no spinning, no connection held for ever.
		fakesrv.WithLogLimit(serveLogLimit),
		fakesrv.WithLogBytes(serveLogBytes),
		fakesrv.WithPreciseTiming(false),
		fakesrv.WithReadTimeout(maxDur),
		fakesrv.WithIdleTimeout(idle),
	}, nil
}

// checkServeMode checks what every serve mode but the fault server's checks: no arguments,
// the common flags, none of the flags notes says do not apply to mode, and no node flag.
func checkServeMode(c *cli.Context, mode string, notes map[string]string) error {
	if c.Args().Present() {
		return usagef("serve takes no arguments, got %q", c.Args().First())
	}
	if err := checkServeCommon(c); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(notes)) {
		if c.IsSet(name) {
			return usagef("--%s does not apply to %s: %s", name, mode, notes[name])
		}
	}
	for _, name := range serveNodeFlags {
		if c.IsSet(name) {
			return usagef("--%s needs --h2 or --h2c", name)
		}
	}
	return nil
}

// checkServeCommon checks the flags of both kinds of labrun serve: --grace and --url-file,
// whose directory must exist (nothing is served when it cannot be written).
func checkServeCommon(c *cli.Context) error {
	if g := c.Duration("grace"); g < 0 {
		return usagef("--grace must not be negative, got %v", g)
	}
	if !c.IsSet("url-file") {
		return nil
	}
	path := c.String("url-file")
	if path == "" {
		return usagef("--url-file needs a file name")
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return usagef("--url-file %s: no directory %s", path, filepath.Dir(path))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usagef("--url-file %s is a directory", path)
	}
	return nil
}

// serveProtocol checks --protocol and the flags that depend on it.
func serveProtocol(c *cli.Context) (fakesrv.ProtocolInfo, error) {
	proto, ok := findProtocol(c.String("protocol"))
	switch {
	case !ok:
		return proto, usagef("--protocol: unknown protocol %q (want %s)", c.String("protocol"), protocolNames())
	case c.Int("max-concurrent-streams") < 0 || c.Int("max-concurrent-streams") > math.MaxInt32:
		return proto, usagef("--max-concurrent-streams must be between 0 and %d, got %d", math.MaxInt32, c.Int("max-concurrent-streams"))
	case c.Int("max-concurrent-streams") > 0 && proto.Name != fakesrv.HTTP2 && proto.Name != fakesrv.H2C:
		return proto, usagef("--max-concurrent-streams needs --protocol h2 or h2c, got %s", proto.Name)
	case c.IsSet("tls-name") && !proto.TLS:
		return proto, usagef("--tls-name needs a TLS protocol (http1-tls or h2), got %s", proto.Name)
	case c.IsSet("ca-out") && !proto.TLS:
		return proto, usagef("--ca-out needs a TLS protocol (http1-tls or h2), got %s", proto.Name)
	case c.IsSet("ca-out") && c.String("ca-out") == "":
		return proto, usagef("--ca-out needs a file name")
	}
	for _, name := range c.StringSlice("tls-name") {
		if name == "" {
			return proto, usagef("--tls-name must not be empty")
		}
	}
	return proto, nil
}

// findProtocol returns the protocol named name.
func findProtocol(name string) (fakesrv.ProtocolInfo, bool) {
	for _, p := range fakesrv.Protocols() {
		if string(p.Name) == name {
			return p, true
		}
	}
	return fakesrv.ProtocolInfo{}, false
}

// protocolNames lists the protocol names: "http1, http1-tls, h2 or h2c".
func protocolNames() string {
	var names []string
	for _, p := range fakesrv.Protocols() {
		names = append(names, string(p.Name))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// durationLimits checks --max-duration and --idle-timeout and returns them, the idle timeout
// defaulting to --max-duration.
func durationLimits(c *cli.Context) (maxDur, idle time.Duration, err error) {
	maxDur, idle = c.Duration("max-duration"), c.Duration("idle-timeout")
	switch {
	case maxDur <= 0:
		return 0, 0, usagef("--max-duration must be positive, got %v", maxDur)
	case idle < 0 || (c.IsSet("idle-timeout") && idle == 0):
		return 0, 0, usagef("--idle-timeout must be positive, got %v", idle)
	}
	if idle == 0 {
		idle = maxDur
	}
	return maxDur, idle, nil
}
