package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv/h2node"
)

// This file is labrun serve --h2 and --h2c: HTTP/2 nodes (fakesrv/h2node) instead of the fault
// server, their /stats and their freeze and thaw controls.

// servedNodes are labrun serve's --h2 or --h2c nodes and what it knows of them.
type servedNodes struct {
	nodes  []*h2node.Node
	caPath string // the CA certificate's file (--h2), "" for h2c
	temp   bool   // caPath is a temporary file of ours, removed at the end

	mu     sync.Mutex // guards frozen
	frozen []bool
}

// nodeNotes say why a flag of the fault server does not apply to the nodes.
var nodeNotes = map[string]string{
	"protocol":     "they speak HTTP/2 themselves; --protocol h2 or h2c serves the fault server's endpoints over HTTP/2",
	"idempotent":   "they reserve nothing",
	"idle-timeout": "they keep a connection until the client closes it or they stop",
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
	for _, name := range slices.Sorted(maps.Keys(nodeNotes)) {
		if c.IsSet(name) {
			return nil, "", nil, usagef("--%s does not apply to --h2 or --h2c nodes: %s", name, nodeNotes[name])
		}
	}
	n, maxDur := c.Int("nodes"), c.Duration("max-duration")
	lat, slow, slowNode, slowAfter := c.Duration("latency"), c.Duration("slow-latency"), c.Int("slow-node"), c.Int("slow-after")
	streams := c.Int("max-concurrent-streams")
	switch {
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

// serveNodes is labrun serve --h2 or --h2c: it starts the nodes and their /stats, prints their
// URLs and serves until SIGINT or SIGTERM.
func serveNodes(c *cli.Context) error {
	ips, port, opts, err := nodeOptions(c)
	if err != nil {
		return err
	}
	sn := &servedNodes{frozen: make([]bool, len(ips))}
	if c.Bool("h2") {
		ca, err := h2node.NewCA()
		if err != nil {
			return err
		}
		for i := range opts {
			opts[i] = append(opts[i], h2node.WithTLS(ca))
		}
		if err := sn.writeCA(c.String("ca-out"), ca.CertPEM()); err != nil {
			return err
		}
	}
	defer sn.removeCA()
	if err := sn.start(ips, port, opts); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ips[0].String(), "0"))
	if err != nil {
		sn.close()
		return fmt.Errorf("cannot listen for /stats: %w", err)
	}
	stats := &http.Server{Handler: sn.handler(), ReadHeaderTimeout: 10 * time.Second}
	go stats.Serve(ln) // ends when stats closes
	defer stats.Close()
	statsURL := "http://" + ln.Addr().String() + "/stats"

	var out, banner strings.Builder
	proto := map[bool]string{true: "TLS", false: "h2c"}[c.Bool("h2")]
	fmt.Fprintf(&banner, "labrun: serving %s (HTTP/2, %s) until Ctrl-C\n", plural(len(sn.nodes), "node"), proto)
	for i, n := range sn.nodes {
		fmt.Fprintln(&out, n.URL)
		fmt.Fprintf(&banner, "  node %d: %s\n", i+1, n.URL)
	}
	fmt.Fprintln(&out, statsURL)
	fmt.Fprintf(&banner, "  stats: %s (POST %s/freeze?node=N and /thaw?node=N hang and free a node)\n", statsURL, strings.TrimSuffix(statsURL, "/stats"))
	if sn.caPath != "" {
		fmt.Fprintf(&banner, "  CA certificate: %s (curl --cacert %s --http2 URL)\n", sn.caPath, sn.caPath)
	}
	fmt.Fprint(c.App.Writer, out.String()) // one write: a script waiting for the file reads it whole
	fmt.Fprint(c.App.ErrWriter, banner.String())
	<-c.Context.Done()
	return sn.stop(c.Duration("grace"), c.App.ErrWriter)
}

// plural counts a noun: "1 node", "3 nodes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// writeCA writes the CA certificate to path, or to a temporary file when path is empty.
func (sn *servedNodes) writeCA(path string, pem []byte) error {
	if path != "" {
		if err := os.WriteFile(path, pem, 0o644); err != nil {
			return fmt.Errorf("--ca-out: %w", err)
		}
		sn.caPath = path
		return nil
	}
	f, err := os.CreateTemp("", "labrun-h2-ca-*.pem")
	if err != nil {
		return fmt.Errorf("write the CA certificate: %w", err)
	}
	sn.caPath, sn.temp = f.Name(), true
	if _, err := f.Write(pem); err != nil {
		f.Close()
		return fmt.Errorf("write the CA certificate: %w", err)
	}
	return f.Close()
}

func (sn *servedNodes) removeCA() {
	if sn.temp {
		os.Remove(sn.caPath) // best effort: it is in the temporary directory
	}
}

// start starts a node per address, all on one port: port, or with "0" one free on every
// address (a few tries, as a port free on the first may be taken on another).
func (sn *servedNodes) start(ips []netip.Addr, port string, opts [][]h2node.Option) error {
	var err error
	for range 5 {
		p := port
		for i, ip := range ips {
			var n *h2node.Node
			n, err = h2node.New(append(opts[i], h2node.WithAddr(net.JoinHostPort(ip.String(), p)))...)
			if err != nil {
				break
			}
			sn.nodes = append(sn.nodes, n)
			_, p, _ = net.SplitHostPort(n.Addr)
		}
		if err == nil {
			return nil
		}
		sn.close()
		sn.nodes = nil
		if port != "0" {
			break
		}
	}
	return fmt.Errorf("cannot start the nodes: %w", err)
}

func (sn *servedNodes) close() {
	for _, n := range sn.nodes {
		n.Close()
	}
}

// stop waits up to grace, or until a second SIGINT or SIGTERM, for the streams in flight to
// finish, then closes the nodes. Like stopServer, it returns an error when it had to cut
// streams (exit 130); a frozen node's streams never finish by themselves.
func (sn *servedNodes) stop(grace time.Duration, stderr io.Writer) error {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	fmt.Fprintf(stderr, "labrun: stopping: streams in flight may finish within %v (Ctrl-C again cuts them)\n", grace)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cut := false
	for busy := sn.inFlight(); busy > 0 && !cut; busy = sn.inFlight() {
		select {
		case <-again:
			cut = true
		case <-deadline.C:
			cut = true
		case <-tick.C:
		}
	}
	sn.close()
	if cut {
		fmt.Fprintln(stderr, "labrun: cut the streams still in flight")
		return errors.New("streams cut")
	}
	fmt.Fprintln(stderr, "labrun: stopped")
	return nil
}

func (sn *servedNodes) inFlight() int {
	total := 0
	for _, n := range sn.nodes {
		total += n.Stats().InFlight
	}
	return total
}

// servedNodeStats is one node in /stats.
type servedNodeStats struct {
	Node                     int         `json:"node"`
	URL                      string      `json:"url"`
	Frozen                   bool        `json:"frozen"`
	Connections              int         `json:"connections"`
	StreamsPerConnection     []int       `json:"streams_per_connection"`
	MaxInFlightPerConnection []int       `json:"max_in_flight_per_connection"`
	Requests                 int         `json:"requests"`
	Statuses                 map[int]int `json:"statuses"`
	Refused                  int         `json:"refused"`
	Cancelled                int         `json:"cancelled"`
	InFlight                 int         `json:"in_flight"`
	MaxInFlight              int         `json:"max_in_flight"`
}

// stats returns every node's counters.
func (sn *servedNodes) stats() []servedNodeStats {
	sn.mu.Lock()
	frozen := slices.Clone(sn.frozen)
	sn.mu.Unlock()
	out := []servedNodeStats{}
	for i, n := range sn.nodes {
		st := n.Stats()
		out = append(out, servedNodeStats{
			Node: i + 1, URL: n.URL, Frozen: frozen[i], Connections: st.Conns,
			StreamsPerConnection: orEmpty(st.Streams), MaxInFlightPerConnection: orEmpty(st.MaxStreamsPerConn),
			Requests: st.Requests, Statuses: st.Statuses, Refused: st.Refused, Cancelled: st.Cancelled,
			InFlight: st.InFlight, MaxInFlight: st.MaxInFlight,
		})
	}
	return out
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// handler serves the nodes' /stats and the freeze and thaw controls.
func (sn *servedNodes) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": sn.stats()}) // a client that left is no one's problem
	})
	for path, freeze := range map[string]bool{"/freeze": true, "/thaw": false} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			which, err := sn.pick(r.URL.Query().Get("node"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sn.mu.Lock()
			for _, i := range which {
				if freeze {
					sn.nodes[i].Freeze()
				} else {
					sn.nodes[i].Thaw()
				}
				sn.frozen[i] = freeze
			}
			sn.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "labrun: GET /stats, POST /freeze?node=N, POST /thaw?node=N (no node: all)", http.StatusNotFound)
	})
	return mux
}

// pick returns the indexes of node N (from 1), or of every node for "".
func (sn *servedNodes) pick(node string) ([]int, error) {
	if node == "" {
		var all []int
		for i := range sn.nodes {
			all = append(all, i)
		}
		return all, nil
	}
	k, err := strconv.Atoi(node)
	if err != nil || k < 1 || k > len(sn.nodes) {
		return nil, fmt.Errorf("labrun: node must be a number from 1 to %d, got %q", len(sn.nodes), node)
	}
	return []int{k - 1}, nil
}
