package http2

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/results"
)

// H2 is experiment H: HTTP/2, where one connection carries everything (docs/http2.md). A name
// resolves to three nodes on loopback, the first slow; OkHttp 3.x's pick, the APNs sender's
// interceptor (spreading, ejection), net/http's dial herd and strict-mode stall
// (golang/go#70809), the APNs throttle and a frozen node. It compares the okhttp and go profiles
// (FixedProfiles): HttpClient 5's classic API, the hc5 profile's, speaks HTTP/1.1 only.
type H2 struct {
	// Pushes is the spreading rows' burst; the ejection rows make four rounds of half as many.
	Pushes int
	// PeerLimit is the nodes' SETTINGS_MAX_CONCURRENT_STREAMS in the okhttp rows.
	PeerLimit int
	// AllocationLimit is the interceptor's allocationLimit per connection.
	AllocationLimit int
	// Latency is a healthy node's answer time; Slow the slow node's.
	Latency, Slow time.Duration
	// GoLimit and GoCalls are the go rows' stream limit and burst (the prototype's 100 and 250,
	// scaled).
	GoLimit, GoCalls int
}

// New returns experiment H with its default parameters.
func New() *H2 {
	return &H2{Pushes: 180, PeerLimit: 500, AllocationLimit: 60, Latency: 20 * time.Millisecond,
		Slow: 300 * time.Millisecond, GoLimit: 10, GoCalls: 25}
}

// Info implements Experiment.
func (*H2) Info() lab.Info {
	return lab.Info{
		Name:  "exp-h",
		Topic: "http2",
		Alone: true, // calibration and rows must see the same machine
		Title: "HTTP/2: one connection carries everything",
		Description: "push.test resolves to three HTTP/2 nodes (127.0.8.1, .2, .3; h2c), the first of " +
			"them slow. OkHttp 3.x's rule puts every stream on one connection to the first " +
			"address until the peer's limit (APNs advertises 500 to 1,500): every push waits for " +
			"the slow node. The APNs sender's interceptor caps each connection at 60 streams, so " +
			"the pool opens connections to the next addresses, and it ejects the connection to an " +
			"address that turns slow (its thresholds scaled by 1/100 in time; production values " +
			"beside). What a burst costs the client on this machine (the set-up under load, each " +
			"stream through the connection's one writer and reader) is measured first, by bursts to " +
			"a node answering in --latency, and given to the model of those rows (config: " +
			"okhttp-burst-calibration). Go's net/http: without StrictMaxConcurrentRequests a burst dials about once " +
			"per call that found every connection full (the dial herd); with it, a burst of more " +
			"than twice the limit stalls until the callers' deadlines (golang/go#70809). The APNs " +
			"throttle (a rejected push lowers the limit to 1 until the next success) serializes a " +
			"burst on Go's one strict connection, where OkHttp opens a second. A node that freezes: " +
			"net/http without a health check waits for each call's deadline, with SendPingTimeout " +
			"and PingTimeout it drops the connection; OkHttp's read timeout ends each stream. It " +
			"runs the okhttp and go profiles by design and takes no --client; hc5 has no HTTP/2 " +
			"(HttpClient 5's classic API speaks HTTP/1.1 only). docs/http2.md tells the story.",
		Examples: []string{
			"labrun exp-h",
			"labrun exp-h --pushes 240 --allocation-limit 40   # more connections in the spreading rows",
			"labrun exp-h --go-limit 4 --go-calls 9            # the smallest burst that stalls for certain: 2 x 4 + 1",
			"labrun exp-h --out h2                              # h2/exp-h.svg: streams in lanes per connection, by node",
		},
	}
}

// Profiles implements FixedProfiles.
func (*H2) Profiles() []string { return []string{lab.ProfileOkHttp, lab.ProfileGo} }

// Params implements Experiment.
func (h *H2) Params() []lab.Param {
	return []lab.Param{
		{Name: "pushes", Usage: "pushes at once in the spreading rows (the ejection rows: 4 rounds of half as many)", Int: &h.Pushes, Min: 2, Max: 1000},
		{Name: "peer-limit", Usage: "the nodes' SETTINGS_MAX_CONCURRENT_STREAMS in the okhttp rows (APNs: 500 to 1,500)", Int: &h.PeerLimit, Min: 1, Max: 10000},
		{Name: "allocation-limit", Usage: "the APNs interceptor's allocationLimit per connection", Int: &h.AllocationLimit, Min: 1, Max: 10000},
		{Name: "latency", Usage: "a healthy node's answer time", Duration: &h.Latency, MaxDuration: time.Second},
		{Name: "slow", Usage: "the slow node's answer time", Duration: &h.Slow, MaxDuration: 2 * time.Second},
		{Name: "go-limit", Usage: "the node's stream limit in the go rows (the prototype's 100, scaled)", Int: &h.GoLimit, Min: 1, Max: 100},
		{Name: "go-calls", Usage: "calls at once in the go rows (the prototype's 250, scaled)", Int: &h.GoCalls, Min: 3, Max: 1000},
	}
}

// Check implements Checker.
func (h *H2) Check() error {
	switch {
	case h.Slow <= h.Latency:
		return fmt.Errorf("--slow (%v) must exceed --latency (%v): the rows need a slow node", h.Slow, h.Latency)
	case h.GoCalls < 2*h.GoLimit+1:
		return fmt.Errorf("--go-calls (%d) must be at least 2 x --go-limit + 1 (%d): below that, whether net/http's strict mode stalls depends on scheduling",
			h.GoCalls, 2*h.GoLimit+1)
	}
	return nil
}

// Run implements Experiment.
func (h *H2) Run(ctx context.Context, opt lab.Options) (results.Run, error) {
	if err := lab.CheckParams(h); err != nil {
		return results.Run{}, err
	}
	host, err := newH2Host(ctx)
	if err != nil {
		return results.Run{}, err
	}
	defer host.close()
	run := lab.NewRun(h, opt)
	run.Axis = "from the start of each scenario"
	for _, step := range []func(context.Context, lab.Options, *h2Host, *results.Run) error{h.calibrate, h.spread, h.eject, h.herd, h.goBurst, h.throttle, h.freeze} {
		if err := step(ctx, opt, host, &run); err != nil {
			return results.Run{}, err
		}
		if err := ctx.Err(); err != nil {
			return results.Run{}, err
		}
	}
	run.Finish(opt.Tolerance)
	return run, nil
}

const h2HostName = "push.test"

// Bounds of every HTTP/2 client of exp-h beyond each row's limits.
const (
	h2ConnectTimeout = 2 * time.Second
	h2CallTimeout    = 10 * time.Second
)

// h2Addrs are the nodes' loopback addresses, apart from the other experiments'.
var h2Addrs = []string{"127.0.8.1", "127.0.8.2", "127.0.8.3"}

// h2Host is the service's name: a DNS server resolving it, and its addresses in order.
type h2Host struct {
	dns *fakesrv.DNS
	ips []string
	// cal is the okhttp client's measured burst cost (h2cal.go).
	cal h2Calibration
}

func newH2Host(ctx context.Context) (*h2Host, error) {
	dns, err := fakesrv.NewDNS(map[string][]string{h2HostName: h2Addrs})
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := dns.Resolver().LookupHost(lctx, h2HostName)
	if err != nil {
		dns.Close()
		return nil, fmt.Errorf("resolve %s: %w", h2HostName, err)
	}
	return &h2Host{dns: dns, ips: ips}, nil
}

func (h *h2Host) close() { h.dns.Close() }

// h2Nodes is one scenario's nodes: node i on the host's i-th address, all on one port, as the
// model's node i.
type h2Nodes struct {
	nodes []*h2node.Node
	model []model.H2Node
}

func (h *h2Host) start(specs []model.H2Node) (*h2Nodes, error) {
	if len(specs) > len(h.ips) {
		panic("experiments: more nodes than addresses")
	}
	var last error
	for range 5 { // a port free on the first address may be taken on another
		ns := &h2Nodes{model: specs}
		port := "0"
		for i, s := range specs {
			n, err := h2node.New(append(h2Options(s), h2node.WithAddr(net.JoinHostPort(h.ips[i], port)))...)
			if err != nil {
				last = err
				break
			}
			ns.nodes = append(ns.nodes, n)
			_, port, _ = net.SplitHostPort(n.Addr)
		}
		if len(ns.nodes) == len(specs) {
			return ns, nil
		}
		ns.close()
	}
	return nil, fmt.Errorf("start HTTP/2 nodes: %w", last)
}

// h2Options make an h2node behave as the model's node; a freeze is the scenario's to make.
func h2Options(s model.H2Node) []h2node.Option {
	opts := []h2node.Option{h2node.WithLatency(s.Latency), h2node.WithThrottle(s.Throttle)}
	if s.MaxStreams > 0 {
		opts = append(opts, h2node.WithMaxStreams(uint32(s.MaxStreams)))
	}
	if s.SlowAfter > 0 {
		opts = append(opts, h2node.WithSlowAfter(s.SlowAfter, s.SlowLatency))
	}
	return opts
}

func (ns *h2Nodes) close() {
	for _, n := range ns.nodes {
		n.Close()
	}
}

func (ns *h2Nodes) routes() []string {
	var r []string
	for _, n := range ns.nodes {
		r = append(r, n.Addr)
	}
	return r
}

func (ns *h2Nodes) index(route string) int {
	return slices.IndexFunc(ns.nodes, func(n *h2node.Node) bool { return n.Addr == route })
}

func (ns *h2Nodes) streams() []int {
	var out []int
	for _, n := range ns.nodes {
		total := 0
		for _, s := range n.Stats().Streams {
			total += s
		}
		out = append(out, total)
	}
	return out
}
