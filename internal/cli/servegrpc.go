package cli

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
)

// This file is labrun serve --grpc: the gRPC fault server (fakesrv/grpcsrv) for users' own
// gRPC clients, with /stats over HTTP/1.1 on the same port.

// serveGRPCFlags are the flags that apply only to --grpc.
var serveGRPCFlags = []string{"keepalive-min-time", "keepalive-permit-without-stream"}

// grpcNotes say why a flag of the fault server does not apply to --grpc.
var grpcNotes = map[string]string{
	"protocol":     "--grpc speaks HTTP/2 over TCP (h2c), as gRPC's insecure channels do",
	"idempotent":   "each call says its fault in its labrun-fault metadata",
	"tls-name":     "--grpc serves no TLS",
	"ca-out":       "--grpc serves no TLS",
	"idle-timeout": "a gRPC client keeps its connection; the server closes none",
	"h2":           "--grpc starts its own server",
	"h2c":          "--grpc starts its own server",
	"tls-faults":   "--grpc starts its own server",
	"dns-delay":    "--grpc serves no DNS",
	"hosts-out":    "--grpc serves no DNS",
}

// grpcFaultList is the fault grammar as serve --grpc prints it on stderr.
const grpcFaultList = `methods: /labrun.Fault/Call (unary), /labrun.Fault/Stream (server stream); any other is served like Call
metadata: labrun-fault: ITEM,ITEM,...  labrun-call: ID (names the call: its retries and refused streams share it)
  work=DUR       the handler works DUR, then answers (it returns early when its context ends)
  hang           it never answers
  ignore-ctx     it does its work to the end whatever the caller does: charged anyway
  unavailable    UNAVAILABLE after the work, trailers-only (retryable); ok-on=N: attempt N answers OK
  status=CODE    any other code the same way: a name (RESOURCE_EXHAUSTED) or 1 to 16; ok-on and pushback apply
  pushback=DUR   with unavailable: grpc-retry-pushback-ms (pushback=stop: -1)
  every=DUR      Stream: one message every DUR; messages=N: N of them (default: until the call ends)
  refuse=N       the call's first N streams refused (RST_STREAM REFUSED_STREAM)
  goaway=N       the call's first N streams get a GOAWAY instead
  freeze         the connection stops both ways, as a frozen host
  next=pass|DUR  a chain hop: after the work it calls this server with labrun-next-fault, passing its context or with a DUR deadline of its own
`

// serveGRPC is labrun serve --grpc; tty says whether stderr is a terminal, and its width.
func serveGRPC(c *cli.Context, tty terminals) error {
	if err := checkServeMode(c, "--grpc", grpcNotes); err != nil {
		return err
	}
	streams := c.Int("max-concurrent-streams")
	if streams < 0 || streams > math.MaxInt32 {
		return usagef("--max-concurrent-streams must be between 0 and %d, got %d", math.MaxInt32, streams)
	}
	if d := c.Duration("max-duration"); d <= 0 {
		return usagef("--max-duration must be positive, got %v", d)
	}
	if d := c.Duration("keepalive-min-time"); d <= 0 {
		return usagef("--keepalive-min-time must be positive, got %v", d)
	}
	addr := c.String("addr")
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return usagef("--addr %s: %v", addr, err)
	}
	if !c.Bool("allow-remote") && !isLoopback(host) {
		return usagef("--addr %s: not a loopback address; pass --allow-remote to listen on it", addr)
	}
	opts := []grpcsrv.Option{grpcsrv.WithAddr(addr), grpcsrv.WithMaxConcurrentStreams(uint32(streams)),
		grpcsrv.WithMaxDuration(c.Duration("max-duration")), grpcsrv.WithLogLimit(serveLogLimit), grpcsrv.WithLogBytes(serveLogBytes),
		grpcsrv.WithKeepaliveEnforcement(c.Duration("keepalive-min-time"), c.Bool("keepalive-permit-without-stream"))}
	if !c.Bool("quiet") {
		log := &requestLogger{w: c.App.ErrWriter, width: tty.errWidth}
		opts = append(opts, grpcsrv.WithOnDone(log.call))
	}
	srv, err := grpcsrv.New(opts...)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	var banner strings.Builder // the address last, under the grammar
	banner.WriteString(indent(grpcFaultList))
	fmt.Fprintf(&banner, "labrun: serving gRPC (h2c) on %s until Ctrl-C, MaxConcurrentStreams %d; GET %s/stats for what each call carried\n",
		srv.Addr, cmp.Or(streams, grpcsrv.DefaultMaxConcurrentStreams), srv.URL)
	fmt.Fprintf(&banner, "  keepalive: pings at least %v apart", c.Duration("keepalive-min-time"))
	if !c.Bool("keepalive-permit-without-stream") {
		banner.WriteString(" while a call is in flight (without one, 2h)")
	}
	banner.WriteString(", the third ping sooner gets GOAWAY too_many_pings\n")
	return serveUntilStopped(c, srv.Addr+"\n", banner.String(), "calls", srv.Shutdown)
}

// isLoopback reports whether host is a loopback address or localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// indent puts two spaces before every line of s.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
