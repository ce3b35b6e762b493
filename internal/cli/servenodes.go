package cli

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/vocab"
)

// This file is labrun serve --h2 and --h2c: HTTP/2 nodes (h2node.Cluster) instead of the fault
// server. It checks the flags and wires them to the cluster, which owns the nodes, their
// /stats and their freeze and thaw controls.

// nodeNotes say why a flag of the fault server does not apply to the nodes.
var nodeNotes = map[string]string{
	"protocol":     "they speak HTTP/2 themselves; --protocol h2 or h2c serves the fault server's endpoints over HTTP/2",
	"idempotent":   "they reserve nothing",
	"tls-name":     "their certificates name their IP addresses and localhost",
	"allow-remote": "a node that can be frozen listens on loopback only",
}

// nodeOptions checks the flags of --h2 and --h2c and returns the nodes' addresses, in order,
// their port ("0": any free one, the same on all) and each node's options.
func nodeOptions(c *cli.Context) (ips []netip.Addr, port string, opts [][]h2node.Option, err error) {
	if c.Args().Present() {
		return nil, "", nil, usagef("serve takes no arguments, got %q", c.Args().First())
	}
	if c.Bool("h2") && c.Bool("h2c") {
		return nil, "", nil, usagef("--h2 and --h2c exclude each other")
	}
	if err := checkServeCommon(c); err != nil {
		return nil, "", nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(nodeNotes)) {
		if c.IsSet(name) {
			return nil, "", nil, usagef("--%s does not apply to --h2 or --h2c nodes: %s", name, nodeNotes[name])
		}
	}
	n, maxDur := c.Int("nodes"), c.Duration("max-duration")
	lat, slow, slowNode, slowAfter := c.Duration("latency"), c.Duration("slow-latency"), c.Int("slow-node"), c.Int("slow-after")
	streams, idle := c.Int("max-concurrent-streams"), c.Duration("idle-timeout")
	switch {
	case c.IsSet("idle-timeout") && idle <= 0:
		return nil, "", nil, usagef("--idle-timeout must be positive, got %v", idle)
	case c.IsSet("ca-out") && c.Bool("h2c"):
		return nil, "", nil, usagef("--ca-out needs --h2, not --h2c: h2c has no certificate")
	case c.IsSet("ca-out") && c.String("ca-out") == "":
		return nil, "", nil, usagef("--ca-out needs a file name")
	case maxDur <= 0:
		return nil, "", nil, usagef("--max-duration must be positive, got %v", maxDur)
	case n < 1 || n > maxServeNodes:
		return nil, "", nil, usagef("--nodes must be between 1 and %d, got %d", maxServeNodes, n)
	case streams < 0 || streams > math.MaxInt32:
		return nil, "", nil, usagef("--max-concurrent-streams must be between 0 and %d, got %d", math.MaxInt32, streams)
	case lat < 0 || slow < 0:
		return nil, "", nil, usagef("--latency and --slow-latency must not be negative, got %v and %v", lat, slow)
	case lat > maxDur || slow > maxDur:
		return nil, "", nil, usagef("--latency and --slow-latency must not exceed --max-duration (%v), got %v and %v", maxDur, lat, slow)
	case slowNode < 1 || slowNode > n:
		return nil, "", nil, usagef("--slow-node must be between 1 and --nodes (%d), got %d", n, slowNode)
	case slowAfter < 0:
		return nil, "", nil, usagef("--slow-after must not be negative, got %d", slowAfter)
	case slow == 0 && (c.IsSet("slow-node") || c.IsSet("slow-after")):
		return nil, "", nil, usagef("--slow-node and --slow-after need --slow-latency")
	}
	addr := c.String("addr")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", nil, usagef("--addr %s: %v", addr, err)
	}
	first, err := netip.ParseAddr(host)
	switch {
	case err != nil || !first.Unmap().IsLoopback():
		return nil, "", nil, usagef("--addr %s: --h2 and --h2c nodes need a loopback IP address (127.0.0.1, ::1)", addr)
	case n > 1 && !first.Unmap().Is4():
		return nil, "", nil, usagef("--nodes %d needs an IPv4 --addr: nodes take consecutive addresses of 127.0.0.0/8", n)
	}
	ip := first.Unmap()
	for i := range n {
		if !ip.IsValid() || !ip.IsLoopback() {
			return nil, "", nil, usagef("--nodes %d from --addr %s leaves 127.0.0.0/8", n, addr)
		}
		o := []h2node.Option{h2node.WithThrottle(c.Bool("throttle"))}
		if c.IsSet("idle-timeout") {
			o = append(o, h2node.WithIdleTimeout(idle))
		}
		if streams > 0 {
			o = append(o, h2node.WithMaxStreams(uint32(streams)))
		}
		switch {
		case slow > 0 && i+1 == slowNode && slowAfter == 0:
			o = append(o, h2node.WithLatency(slow)) // slow from its first request
		case slow > 0 && i+1 == slowNode:
			o = append(o, h2node.WithLatency(lat), h2node.WithSlowAfter(slowAfter, slow))
		default:
			o = append(o, h2node.WithLatency(lat))
		}
		ips, opts = append(ips, ip), append(opts, o)
		ip = ip.Next()
	}
	return ips, port, opts, nil
}

// serveNodes is labrun serve --h2 or --h2c: it starts the nodes and their control server
// (h2node.Cluster), prints their URLs and serves until told to stop.
func serveNodes(c *cli.Context) error {
	ips, port, opts, err := nodeOptions(c)
	if err != nil {
		return err
	}
	var ca caFile
	if c.Bool("h2") {
		authority, err := h2node.NewCA()
		if err != nil {
			return err
		}
		for i := range opts {
			opts[i] = append(opts[i], h2node.WithTLS(authority))
		}
		if err := ca.write(c.String("ca-out"), authority.CertPEM()); err != nil {
			return err
		}
	}
	defer ca.remove()
	cluster, err := h2node.NewCluster(ips, port, opts)
	if err != nil {
		return err
	}
	statsURL := cluster.ControlURL + "/stats"

	var out, banner strings.Builder
	proto := map[bool]string{true: "TLS", false: "h2c"}[c.Bool("h2")]
	fmt.Fprintf(&banner, "labrun: serving %s (HTTP/2, %s) until Ctrl-C\n", vocab.Plural(len(cluster.Nodes), "node"), proto)
	for i, n := range cluster.Nodes {
		fmt.Fprintln(&out, n.URL)
		fmt.Fprintf(&banner, "  node %d: %s\n", i+1, n.URL)
	}
	fmt.Fprintln(&out, statsURL)
	fmt.Fprintf(&banner, "  stats: %s (POST %s/freeze?node=N and /thaw?node=N hang and free a node)\n", statsURL, cluster.ControlURL)
	if ca.path != "" {
		fmt.Fprintf(&banner, "  CA certificate: %s (curl --cacert %s --http2 URL)\n", ca.path, ca.path)
	}
	return serveUntilStopped(c, out.String(), banner.String(), "streams", cluster.Shutdown)
}

// caFile is the CA certificate's file of --h2: --ca-out's, or a temporary file of ours,
// removed at the end.
type caFile struct {
	path string
	temp bool
}

// write writes pem to path, or to a temporary file when path is empty.
func (f *caFile) write(path string, pem []byte) error {
	if path != "" {
		if err := os.WriteFile(path, pem, 0o644); err != nil {
			return fmt.Errorf("--ca-out: %w", err)
		}
		f.path = path
		return nil
	}
	tmp, err := os.CreateTemp("", "labrun-h2-ca-*.pem")
	if err != nil {
		return fmt.Errorf("write the CA certificate: %w", err)
	}
	f.path, f.temp = tmp.Name(), true
	if _, err := tmp.Write(pem); err != nil {
		tmp.Close()
		return fmt.Errorf("write the CA certificate: %w", err)
	}
	return tmp.Close()
}

func (f *caFile) remove() {
	if f.temp {
		os.Remove(f.path) // best effort: it is in the temporary directory
	}
}
