package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv"
)

//go:generate go test -run ^TestServeManual$ -update-serve-doc .

// shutdownGrace is how long labrun serve lets requests in flight finish after SIGINT/SIGTERM
// before it cuts them.
const shutdownGrace = 5 * time.Second

// serveLogLimit bounds the request log of a long-running labrun serve; /stats counts all.
const serveLogLimit = 10000

// serveFlags are labrun serve's flags; docs/serve.md's flag table is generated from them.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: fakesrv.DefaultAddr, Usage: "listen address (port 0: any free port)"},
		&cli.BoolFlag{Name: "allow-remote", Usage: "allow a listen address that is not loopback"},
		&cli.DurationFlag{Name: "max-duration", Value: fakesrv.DefaultMaxDuration, Usage: "cap on every delay, stall and trickle"},
		&cli.BoolFlag{Name: "idempotent", Usage: "deduplicate every reservation by order id"},
		&cli.StringFlag{Name: "protocol", Value: string(fakesrv.HTTP1), Usage: "protocol: " + protocolHelp()},
		&cli.IntFlag{Name: "max-concurrent-streams", Usage: "SETTINGS_MAX_CONCURRENT_STREAMS advertised over HTTP/2 (0: net/http's default, 250)"},
		&cli.StringSliceFlag{Name: "tls-name", Usage: "a host name or IP address for the certificate, besides 127.0.0.1, ::1 and localhost (repeatable)"},
		&cli.StringFlag{Name: "ca-out", Usage: "write the CA certificate (PEM) to this file, for clients to trust (TLS protocols)"},
	}
}

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

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the fault server for HTTP clients in any language",
		Description: "Serves labrun's fake server until SIGINT or SIGTERM, then shuts down " +
			"gracefully. The base URL goes to stdout (one line, for scripts), the endpoint list " +
			"to stderr. It binds loopback only unless --allow-remote is given, and every " +
			"duration a request asks for is capped by --max-duration.\n\n" + endpointList(fakesrv.Endpoints()) + "\n" +
			"Examples:\n   labrun serve\n   labrun serve --addr 127.0.0.1:8080\n" +
			"   labrun serve --protocol h2 --ca-out ca.pem   # then: curl --cacert ca.pem URL/delay\n" +
			"   url=$(labrun serve 2>/dev/null &)   # in a script: read the URL from stdout",
		Flags:        serveFlags(),
		OnUsageError: onUsageError,
		Action:       serve,
	}
}

// serve is labrun serve's action.
func serve(c *cli.Context) error {
	opts, err := serveOptions(c)
	if err != nil {
		return err
	}
	srv, err := fakesrv.New(opts...)
	if err != nil {
		return usageError{fmt.Errorf("--addr: %w", err)}
	}
	if path := c.String("ca-out"); path != "" {
		if err := os.WriteFile(path, srv.CACertPEM(), 0o644); err != nil {
			srv.Close()
			return fmt.Errorf("--ca-out: %w", err)
		}
	}
	fmt.Fprintln(c.App.Writer, srv.URL)
	fmt.Fprintf(c.App.ErrWriter, "labrun: serving on %s until Ctrl-C\n%s", srv.URL, endpointList(fakesrv.Endpoints()))
	<-c.Context.Done()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "labrun: requests still in flight after %v were cut\n", shutdownGrace)
	}
	fmt.Fprintln(c.App.ErrWriter, "labrun: stopped")
	return nil
}

// serveOptions checks labrun serve's arguments and flags and turns them into the fake
// server's options. The listen address is checked by fakesrv.New.
func serveOptions(c *cli.Context) ([]fakesrv.Option, error) {
	if c.Args().Present() {
		return nil, usagef("serve takes no arguments, got %q", c.Args().First())
	}
	if d := c.Duration("max-duration"); d <= 0 {
		return nil, usagef("--max-duration must be positive, got %v", d)
	}
	proto, ok := findProtocol(c.String("protocol"))
	switch {
	case !ok:
		return nil, usagef("--protocol: unknown protocol %q (want %s)", c.String("protocol"), protocolNames())
	case c.Int("max-concurrent-streams") < 0:
		return nil, usagef("--max-concurrent-streams must not be negative, got %d", c.Int("max-concurrent-streams"))
	case c.Int("max-concurrent-streams") > 0 && proto.Name != fakesrv.HTTP2 && proto.Name != fakesrv.H2C:
		return nil, usagef("--max-concurrent-streams needs --protocol h2 or h2c, got %s", proto.Name)
	case c.IsSet("tls-name") && !proto.TLS:
		return nil, usagef("--tls-name needs a TLS protocol (http1-tls or h2), got %s", proto.Name)
	case c.IsSet("ca-out") && !proto.TLS:
		return nil, usagef("--ca-out needs a TLS protocol (http1-tls or h2), got %s", proto.Name)
	case c.IsSet("ca-out") && c.String("ca-out") == "":
		return nil, usagef("--ca-out needs a file name")
	}
	for _, name := range c.StringSlice("tls-name") {
		if name == "" {
			return nil, usagef("--tls-name must not be empty")
		}
	}
	return []fakesrv.Option{
		fakesrv.WithAddr(c.String("addr")),
		fakesrv.WithAllowRemote(c.Bool("allow-remote")),
		fakesrv.WithMaxDuration(c.Duration("max-duration")),
		fakesrv.WithIdempotent(c.Bool("idempotent")),
		fakesrv.WithLogLimit(serveLogLimit),
		fakesrv.WithProtocol(proto.Name),
		fakesrv.WithMaxConcurrentStreams(c.Int("max-concurrent-streams")),
		fakesrv.WithTLSNames(c.StringSlice("tls-name")...),
	}, nil
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
