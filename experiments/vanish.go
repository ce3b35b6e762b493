package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/netns"
	"github.com/labrun/labrun/netns/vanish"
	"github.com/labrun/labrun/param"
	"github.com/labrun/labrun/results"
	"github.com/labrun/labrun/vocab"
)

// Vanish is experiment I: peers that vanish, measured. The documentation's answers for a
// powered-off peer (127 s to give up a connect, 924.6 s to give up a request on a pooled
// connection) are Linux timers; exp-i measures them scaled down to seconds (lab-spec section
// 8), each next to the model's value for the scaled kernel and the model's extrapolation to the
// default counts, and then what clients do about it: connect timeouts (OkHttp's per address),
// read timeouts and deadlines, HttpClient 5's stale check (pit 6), TCP keepalive and Go's HTTP/2
// health check.
//
// The rows about a host that is down with a connect timeout, and the SYN retries of a single
// socket (TCP_SYNCNT), run on loopback in the calling namespace. Every other row needs a
// network of labrun's own (package netns: an unprivileged user and network namespace with its
// own tcp_retries2, a veth pair whose server end goes down); where that is unavailable they
// are skipped, with the reason, and the run still passes unless RequireNetns.
type Vanish struct {
	// SYNRetries and Retries2 are comma-separated counts: the host-down rows' SYN retries and
	// the dropped-connection rows' tcp_retries2, one row (and one namespace) each.
	SYNRetries string
	Retries2   string

	ConnectTimeout time.Duration
	ReadTimeout    time.Duration
	Deadline       time.Duration

	KeepaliveIdle     time.Duration
	KeepaliveInterval time.Duration
	KeepaliveCount    int

	SendPingTimeout time.Duration
	PingTimeout     time.Duration

	// RequireNetns makes rows that cannot run for want of namespaces a failure.
	RequireNetns bool

	// namespaces reports whether the namespace rows can run, nil meaning netns.Available. The
	// experiment's tests set it to force the skipped path; nothing else does.
	namespaces func() error
}

// NewVanish returns experiment I with its default parameters: the scaled-down kernel of
// lab-spec section 8.
func NewVanish() *Vanish {
	return &Vanish{
		SYNRetries: "1,2", Retries2: "2,3,4",
		ConnectTimeout: time.Second, ReadTimeout: 250 * time.Millisecond, Deadline: time.Second,
		KeepaliveIdle: time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 3,
		SendPingTimeout: time.Second, PingTimeout: 500 * time.Millisecond,
	}
}

// Info implements Experiment.
func (*Vanish) Info() Info {
	return Info{
		Name:  "exp-i",
		Title: "peers that vanish, measured",
		Description: "A server host that is powered off or cut off by a firewall sends no FIN and no " +
			"RST: Linux gives up a connect after 127 s (tcp_syn_retries 6) and a request on a " +
			"pooled connection after about 924.6 s (tcp_retries2 15). exp-i measures those timers " +
			"scaled down to seconds, in a user and network namespace of its own with a veth pair " +
			"whose server end goes down (no root, nothing of the host's changes), next to the " +
			"model's value and its extrapolation to the default counts; then connect timeouts " +
			"(OkHttp's apply per address), a read timeout and a deadline on the dead connection, " +
			"HttpClient 5's stale check (it passes the dead connection), TCP keepalive, and Go's " +
			"HTTP/2 health check (SendPingTimeout, PingTimeout). Rows that need namespaces are " +
			"skipped where the system forbids them, unless --require-netns. It compares hc5, " +
			"okhttp and go by design and takes no --client.",
		Examples: []string{
			"labrun exp-i",
			"labrun exp-i --tcp-retries2 3 --syn-retries 1   # fewer rows, quicker",
			"labrun exp-i --require-netns                    # fail where namespaces are forbidden",
		},
	}
}

// Profiles implements FixedProfiles.
func (*Vanish) Profiles() []string { return []string{ProfileHC5, ProfileOkHttp, ProfileGo} }

// Params implements Experiment.
func (v *Vanish) Params() []param.Param {
	return []param.Param{
		{Name: "syn-retries", Usage: fmt.Sprintf("SYN retries of the host-down rows, comma-separated, each 1..%d (Linux: %d, 127 s)", vanish.MaxSYNRetries, model.SYNRetries), String: &v.SYNRetries},
		{Name: "tcp-retries2", Usage: fmt.Sprintf("tcp_retries2 of the dropped-connection rows, comma-separated, each 0..%d (Linux: %d, 924.6 s)", vanish.MaxRetries2, model.DataRetries), String: &v.Retries2},
		{Name: "connect-timeout", Usage: "connect timeout of the clients (the host is down)", Duration: &v.ConnectTimeout, MaxDuration: vanish.MaxWait},
		{Name: "read-timeout", Usage: "read timeout on the dead pooled connection", Duration: &v.ReadTimeout, MaxDuration: vanish.MaxWait},
		{Name: "deadline", Usage: "whole-call deadline on the dead pooled connection", Duration: &v.Deadline, MaxDuration: vanish.MaxWait},
		{Name: "keepalive-idle", Usage: "TCP keepalive: idle time before the first probe (whole seconds)", Duration: &v.KeepaliveIdle, MaxDuration: vanish.MaxKeepalive},
		{Name: "keepalive-interval", Usage: "TCP keepalive: time between probes (whole seconds)", Duration: &v.KeepaliveInterval, MaxDuration: vanish.MaxKeepalive},
		{Name: "keepalive-count", Usage: "TCP keepalive: unanswered probes before the kernel gives up", Int: &v.KeepaliveCount, Min: 1, Max: 5},
		{Name: "send-ping-timeout", Usage: "Go HTTP/2: PING after this long without a frame (HTTP2Config.SendPingTimeout)", Duration: &v.SendPingTimeout, MaxDuration: vanish.MaxWait},
		{Name: "ping-timeout", Usage: "Go HTTP/2: close the connection when the PING is unanswered this long", Duration: &v.PingTimeout, MaxDuration: vanish.MaxWait},
		{Name: "require-netns", Usage: "fail, rather than skip, the rows that need network namespaces", Bool: &v.RequireNetns},
	}
}

// vanishIdle is how long the pooled connections sit idle after the peer vanished before the
// calls on them: the jobs' own default.
var vanishIdle = vanish.DefaultDropped().Inactivity

// Check implements Checker.
func (v *Vanish) Check() error {
	if _, err := counts("syn-retries", v.SYNRetries, 1, vanish.MaxSYNRetries); err != nil {
		return err
	}
	if _, err := counts("tcp-retries2", v.Retries2, 0, vanish.MaxRetries2); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"connect-timeout", v.ConnectTimeout}, {"read-timeout", v.ReadTimeout}, {"deadline", v.Deadline},
		{"keepalive-idle", v.KeepaliveIdle}, {"keepalive-interval", v.KeepaliveInterval}, {"ping-timeout", v.PingTimeout}} {
		if p.d == 0 {
			return fmt.Errorf("--%s must be set", p.name)
		}
	}
	if g := model.KeepaliveGiveUp(v.KeepaliveIdle, v.KeepaliveInterval, v.KeepaliveCount); g > vanish.MaxKeepalive {
		return fmt.Errorf("--keepalive-idle + --keepalive-count x --keepalive-interval must be at most %v (in whole seconds), got %v", vanish.MaxKeepalive, g)
	}
	if v.SendPingTimeout <= vanishIdle {
		return fmt.Errorf("--send-ping-timeout must be longer than %v, got %v: the call starts %v after the last frame, before the health check", vanishIdle, v.SendPingTimeout, vanishIdle)
	}
	return nil
}

// counts parses a comma-separated list of distinct counts in lo..hi, naming the flag.
func counts(flag, list string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("--%s wants comma-separated counts in %d..%d, got %q", flag, lo, hi, list)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("--%s lists %d twice", flag, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// vanishJobTime bounds each measurement: the longest, tcp_retries2 4 on a knife edge with a
// 5 s connect timeout after it, takes under 20 s.
const vanishJobTime = 45 * time.Second

// vanishStagger separates the starts of the namespace children. A child is started with
// CLONE_NEWUSER, which rules out vfork: Go forks the whole process, and while the kernel
// copies its page tables every page fault of the parent waits. Forks that overlap compound:
// nine children 50 ms apart stalled a loopback GET in the parent for 230 ms (with 200 MB of
// heap), enough to push rows of exp-i and, under labrun all, of other experiments out of their
// tolerance; 150 ms apart the worst stall measured was 15 ms.
const vanishStagger = 150 * time.Millisecond

// vanishHosts are the loopback addresses of the host that is down, all on one port; the names
// resolve to the first or to all three. exp-e uses 127.0.0.2 to .4, so that both can run at
// once.
var vanishHosts = []string{"127.0.0.5", "127.0.0.6", "127.0.0.7"}

const (
	vanishOne   = "one.vanish.test"
	vanishThree = "three.vanish.test"
)

// vanishMeasured is everything exp-i measured. Each field is written by one of Run's
// goroutines (the maps under mu, one entry each) and read once they all ended.
type vanishMeasured struct {
	netns   error        // why the namespace rows cannot run, nil when they can
	host    model.Kernel // the calling namespace's SYN rules
	clients []vanishCall // in the order of Vanish.clients
	ka      vanish.KeepaliveResult
	h2      vanish.HTTP2Result

	mu       sync.Mutex // guards the maps, by SYN retries or tcp_retries2
	dials    map[int]vanish.Sample
	hostDown map[int]vanish.HostDownResult
	dropped  map[int]vanish.DroppedResult
}

// set stores v under k in m, holding mu.
func set[V any](mu *sync.Mutex, m map[int]V, k int, v V) {
	mu.Lock()
	defer mu.Unlock()
	m[k] = v
}

// vanishClient is a connect-timeout row: a profile against a host name of one or three
// addresses, none of which answers.
type vanishClient struct {
	name    string
	profile string
	host    string
	routes  int
}

// vanishCall is a connect-timeout row's call and the model's prediction for it.
type vanishCall struct {
	p   model.Prediction
	res *client.Result
}

func (v *Vanish) clients() []vanishClient {
	ct := v.ConnectTimeout.String()
	return []vanishClient{
		{"2. host down, hc5, connect timeout " + ct + ", one address", ProfileHC5, vanishOne, 1},
		{"2. host down, okhttp, connect timeout " + ct + ", one address", ProfileOkHttp, vanishOne, 1},
		{"2. host down, okhttp, connect timeout " + ct + " per address, three addresses", ProfileOkHttp, vanishThree, 3},
		{"2. host down, go, net.Dialer.Timeout " + ct + ", one address", ProfileGo, vanishOne, 1},
	}
}

// Run implements Experiment. It runs every measurement at once, each bounded, and returns
// ctx's error when ctx ends first; every namespace child has then been killed and reaped
// (netns.Run) and every loopback listener closed.
func (v *Vanish) Run(ctx context.Context, opt Options) (results.Run, error) {
	if err := check(v, opt.profile()); err != nil {
		return results.Run{}, err
	}
	if err := ctx.Err(); err != nil {
		return results.Run{}, err
	}
	syns, _ := counts("syn-retries", v.SYNRetries, 1, vanish.MaxSYNRetries)
	r2s, _ := counts("tcp-retries2", v.Retries2, 0, vanish.MaxRetries2)
	available := v.namespaces
	if available == nil {
		available = netns.Available
	}
	m := &vanishMeasured{netns: available(), host: vanish.HostKernel(), dials: map[int]vanish.Sample{},
		clients: make([]vanishCall, len(v.clients())), hostDown: map[int]vanish.HostDownResult{},
		dropped: map[int]vanish.DroppedResult{}}

	down, err := newDeadHost()
	if err != nil {
		return results.Run{}, err
	}
	defer down.close()

	jobs := v.jobs(m, down, syns, r2s)
	var total time.Duration // when the model expects the last measurement to end
	for _, j := range jobs {
		total = max(total, j.start+j.expect)
	}
	opt.progress(total, "%s · %d measurements at once", v.Info().Name, len(jobs))
	var mu sync.Mutex // guards done
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	for _, j := range jobs {
		g.Go(func() error {
			if err := sleepCtx(gctx, j.start); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(gctx, vanishJobTime)
			defer cancel()
			if err := j.run(ctx); err != nil {
				return fmt.Errorf("%s: %w", j.name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			done++
			opt.progress(0, "%s · %d/%d measured: %s", v.Info().Name, done, len(jobs), j.name)
			return nil
		})
	}
	err = g.Wait()
	if ctx.Err() != nil {
		return results.Run{}, ctx.Err()
	}
	if err != nil {
		return results.Run{}, err
	}

	run := newRun(v, opt)
	run.Rows = v.rows(m, syns, r2s, opt.Tolerance)
	for i, c := range v.clients() {
		run.Calls = append(run.Calls, timeline(c.name, m.clients[i].res, 0))
	}
	run.Finish(opt.Tolerance)
	return run, nil
}

// vanishJob is one measurement of exp-i: it runs from start on, with its own time bound, and
// writes its result into its own part of vanishMeasured.
type vanishJob struct {
	name   string
	start  time.Duration // when it starts, after Run started the jobs
	expect time.Duration // how long the model expects it to take, once started
	run    func(ctx context.Context) error
}

// jobs lists exp-i's measurements: the loopback ones at once, the namespace children
// vanishStagger apart, the longest first so that the run ends as soon as it can.
func (v *Vanish) jobs(m *vanishMeasured, down *deadHost, syns, r2s []int) []vanishJob {
	k := model.LoopbackKernel()
	var jobs []vanishJob
	for _, n := range syns {
		jobs = append(jobs, vanishJob{name: fmt.Sprintf("TCP_SYNCNT %d on loopback", n), expect: m.host.SYNGiveUp(n),
			run: func(ctx context.Context) error {
				set(&m.mu, m.dials, n, vanish.DialDown(ctx, down.addr, n, 0))
				return ctx.Err()
			}})
	}
	for i, c := range v.clients() {
		jobs = append(jobs, vanishJob{name: c.name[3:], expect: time.Duration(c.routes) * v.ConnectTimeout,
			run: func(ctx context.Context) (err error) {
				m.clients[i], err = v.connect(ctx, c, down)
				return err
			}})
	}
	if m.netns != nil {
		return jobs
	}
	var children []vanishJob
	for _, n := range syns {
		children = append(children, vanishJob{name: fmt.Sprintf("tcp_syn_retries %d", n), expect: k.SYNGiveUp(n),
			run: func(ctx context.Context) error {
				res, err := vanish.HostDown(ctx, vanish.HostDownInput{SYNRetries: n, ConnectTimeout: v.ConnectTimeout})
				set(&m.mu, m.hostDown, n, res)
				return err
			}})
	}
	for _, r := range r2s {
		// Its longest call is the GET that net/http replays after the kernel gave up.
		children = append(children, vanishJob{name: fmt.Sprintf("tcp_retries2 %d", r), expect: k.DataGiveUp(r) + v.ConnectTimeout,
			run: func(ctx context.Context) error {
				res, err := vanish.Dropped(ctx, vanish.DroppedInput{Retries2: r, ReadTimeout: v.ReadTimeout,
					Deadline: v.Deadline, ConnectTimeout: v.ConnectTimeout, Inactivity: vanishIdle})
				set(&m.mu, m.dropped, r, res)
				return err
			}})
	}
	ka := v.keepaliveInput(r2s)
	children = append(children, vanishJob{name: "keepalive", expect: ka.NextCallAt() + k.DataGiveUp(ka.Retries2) + v.ConnectTimeout,
		run: func(ctx context.Context) (err error) {
			m.ka, err = vanish.Keepalive(ctx, ka)
			return err
		}})
	h2 := vanish.HTTP2Input{Retries2: slices.Min(r2s), SendPingTimeout: v.SendPingTimeout, PingTimeout: v.PingTimeout,
		Inactivity: vanishIdle, Deadline: v.Deadline}
	children = append(children, vanishJob{name: "HTTP/2", expect: h2.Inactivity + max(k.DataGiveUp(h2.Retries2), model.HTTP2PingGiveUp(h2.SendPingTimeout, h2.PingTimeout)),
		run: func(ctx context.Context) (err error) {
			m.h2, err = vanish.HTTP2(ctx, h2)
			return err
		}})
	slices.SortStableFunc(children, func(a, b vanishJob) int { return cmp.Compare(b.expect, a.expect) })
	for i := range children {
		children[i].start = time.Duration(i) * vanishStagger
	}
	return append(jobs, children...)
}

// keepaliveInput is the keepalive job's input: the call without keepalive waits for the
// smallest tcp_retries2.
func (v *Vanish) keepaliveInput(r2s []int) vanish.KeepaliveInput {
	return vanish.KeepaliveInput{Idle: v.KeepaliveIdle, Interval: v.KeepaliveInterval, Count: v.KeepaliveCount,
		Retries2: slices.Min(r2s), ConnectTimeout: v.ConnectTimeout}
}

// connect makes the call of a connect-timeout row and predicts it.
func (v *Vanish) connect(ctx context.Context, c vanishClient, down *deadHost) (vanishCall, error) {
	b, err := build(c.profile, spec{ConnectTimeout: v.ConnectTimeout, Resolver: down.resolver})
	if err != nil {
		return vanishCall{}, err
	}
	defer b.c.Close()
	p := model.Predict(model.Downstream{HostDown: true, Routes: c.routes}, b.limits, true, 0)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, down.url(c.host), nil)
	if err != nil {
		return vanishCall{}, err
	}
	res, _ := b.c.Do(ctx, req)
	return vanishCall{p: p, res: res}, ctx.Err()
}

// deadHost is a host that is down on loopback: a listener that drops SYNs on each of
// vanishHosts, all on one port, and a DNS server that resolves vanishOne to the first and
// vanishThree to all three.
type deadHost struct {
	addr     string // the first address and the port, for a plain dial
	port     string
	resolver *net.Resolver
	close    func()
}

func newDeadHost() (*deadHost, error) {
	var holes []*fakesrv.Blackhole
	closeHoles := func() {
		for _, h := range holes {
			h.Close()
		}
	}
	port := 0
	for _, ip := range vanishHosts {
		h, err := fakesrv.NewBlackhole(ip, port)
		if err != nil {
			closeHoles()
			return nil, fmt.Errorf("an address that drops SYNs: %w", err)
		}
		holes, port = append(holes, h), h.Port
	}
	dns, err := fakesrv.NewDNS(map[string][]string{vanishOne: vanishHosts[:1], vanishThree: vanishHosts})
	if err != nil {
		closeHoles()
		return nil, err
	}
	return &deadHost{addr: holes[0].Addr, port: strconv.Itoa(port), resolver: dns.Resolver(),
		close: func() { dns.Close(); closeHoles() }}, nil
}

// url is the URL of name on the host's port.
func (d *deadHost) url(name string) string { return "http://" + net.JoinHostPort(name, d.port) + "/" }

// rows turns the measurements into the table, in the order of the issue: host down, with a
// connect timeout, a dropped connection, limits on it, the stale check, keepalive, HTTP/2. tol
// is the run's tolerance, which decides when a kernel row's note shows the timer wheel's window.
func (v *Vanish) rows(m *vanishMeasured, syns, r2s []int, tol time.Duration) []results.Row {
	rows := []results.Row{v.netnsRow(m.netns)}
	// ns marks a row that needs namespaces skipped when they are unavailable; its expected
	// values then come from the nominal kernel.
	ns := func(r results.Row) results.Row {
		if m.netns != nil {
			r.Skipped = "needs network namespaces: " + m.netns.Error()
			r.MeasuredMs, r.Outcome, r.Calls, r.Server = nil, "", 0, ""
		}
		return r
	}
	kernel := func(k model.Kernel) model.Kernel {
		if m.netns != nil || k == (model.Kernel{}) {
			return model.LoopbackKernel()
		}
		return k
	}

	// 1. A host that is down, no connect timeout: the SYN retries decide.
	for _, n := range syns {
		s := m.dials[n]
		w := m.host.SYNGiveUpWindow(n)
		r, wheel := kernelRow(fmt.Sprintf("1. host down, no connect timeout: dial, TCP_SYNCNT %d (loopback)", n),
			w.Average, []model.Window{w}, vocab.KernelTimeout, s, tol)
		r.Documented, r.DocumentedMs = synDocumented(n, m.host)
		r.Server = orErr(join("no SYN-ACK: the kernel gives up (ETIMEDOUT)", wheel), r, s)
		rows = append(rows, r)
	}
	for _, n := range syns {
		res := m.hostDown[n]
		k := kernel(res.Kernel)
		w := k.SYNGiveUpWindow(n)
		r, wheel := kernelRow(fmt.Sprintf("1. host down, no connect timeout: labrun client, tcp_syn_retries %d", n),
			w.Average, []model.Window{w}, vocab.KernelTimeout, res.Client, tol)
		r.Documented, r.DocumentedMs = synDocumented(n, k)
		r.Server = orErr(join("the namespace's tcp_syn_retries; the client sets no socket option", wheel), r, res.Client)
		rows = append(rows, ns(r))
	}

	// 2. A host that is down, with a connect timeout (loopback).
	for i, c := range v.clients() {
		call := m.clients[i]
		r := callRow(call.p, call.res)
		r.Name = c.name
		r.ExpectedNewConnections = results.Count(len(call.p.Attempts))
		r.NewConnections = results.Count(len(call.res.Attempts))
		addrs := "1 address"
		if c.routes > 1 {
			addrs = fmt.Sprintf("%d addresses", c.routes)
		}
		r.Server = fmt.Sprintf("%s, none answers; %s", addrs, plural(len(call.res.Attempts), "attempt"))
		rows = append(rows, r)
	}

	// 3. A pooled connection whose peer vanished, no read timeout: tcp_retries2 decides.
	for _, r2 := range r2s {
		res := m.dropped[r2]
		k := kernel(res.Kernel)
		r, wheel := kernelRow(fmt.Sprintf("3. peer vanished, pooled connection, hc5 POST, no read timeout: tcp_retries2 %d", r2),
			k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.ClientPost, tol)
		r.Documented, r.DocumentedMs = dataDocumented(r2, k)
		r.Server = orErr(join(fmt.Sprintf("not the textbook %s: a budget counted from the first retransmission, checked only when the RTO timer fires (%s)",
			secs(model.DataGiveUpAfter(r2)), kernelText(k)), wheel), r, res.ClientPost)
		rows = append(rows, ns(r))
	}

	// 4. Limits on the dead connection, and 5. the stale check: on the largest tcp_retries2,
	// where the kernel is furthest away.
	high := slices.Max(r2s)
	res := m.dropped[high]
	k := kernel(res.Kernel)
	limited := func(name string, l model.Limits, s vanish.Sample, note string) results.Row {
		p := k.Predict(model.Downstream{Dropped: true}, l, false, 0, 0, high)
		r := sampleRow(name, p.Total, p.Outcome, s)
		r.Server = orErr(note, r, s)
		return ns(r)
	}
	rows = append(rows,
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, read timeout %v", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.ReadTimeout, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, deadline %v", v.Deadline),
			model.Limits{Deadline: v.Deadline}, res.Deadline, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		ns(staleRow("5. stale check (validateAfterInactivity) on a connection the server closed", model.PeerClosed, res.Stale.ClosedHealthy, res.Stale.ClosedReason)),
		ns(staleRow("5. stale check (validateAfterInactivity) on the connection whose peer vanished", model.PeerVanished, res.Stale.VanishedHealthy, res.Stale.VanishedReason)),
		limited(fmt.Sprintf("5. the request after the check passed: only the read timeout %v ends it", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.Stale.After, "the check saw nothing: a silent drop sends nothing to see"),
	)

	// 6. TCP keepalive on an idle pooled connection.
	rows = append(rows, v.keepaliveRows(m.ka, kernel(m.ka.Kernel), r2s, tol, ns)...)

	// 7. HTTP/2 through Go's net/http.
	return append(rows, v.http2Rows(m.h2, kernel(m.h2.Kernel), slices.Min(r2s), tol, ns)...)
}

// keepaliveRows are the rows of TCP keepalive on the idle pooled connection.
func (v *Vanish) keepaliveRows(res vanish.KeepaliveResult, k model.Kernel, r2s []int, tol time.Duration, ns func(results.Row) results.Row) []results.Row {
	in := v.keepaliveInput(r2s)
	settings := fmt.Sprintf("%v/%v/%d", v.KeepaliveIdle, v.KeepaliveInterval, v.KeepaliveCount)
	w := k.KeepaliveGiveUpWindow(in.Idle, in.Interval, in.Count)
	killed, wheel := kernelRow("6. keepalive "+settings+" on the idle pooled connection: killed after",
		w.Average, []model.Window{w}, vocab.KernelTimeout, res.Killed, tol)
	doc := model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count)
	goIdle, goCount := 15*time.Second, 9 // net.Dialer's keepalive when KeepAlive is zero (net/tcpsock.go)
	killed.Documented = fmt.Sprintf("%s · Go's %v/%v/%d: %s, model %s", secs(doc), goIdle, goIdle, goCount,
		secs(model.KeepaliveGiveUp(goIdle, goIdle, goCount)), secs(k.KeepaliveGiveUp(goIdle, goIdle, goCount)))
	killed.DocumentedMs = results.Ms(doc)
	killed.Server = orErr(join("idle + count x interval from the last segment received; probes unanswered", wheel), killed, res.Killed)

	next := in.NextCallAt()
	// The next call finds the pool empty when keepalive gave up before it, and dials the
	// host that is gone.
	fresh := model.Predict(model.Downstream{HostDown: true}, model.Limits{Profile: model.Go, ConnectTimeout: v.ConnectTimeout}, true, 0)
	on := sampleRow(fmt.Sprintf("6. next call at %v, keepalive on: a new connection", next), fresh.Total, fresh.Outcome, res.NextCall)
	on.Server = orErr(reuseNote(res.NextCall, false, "keepalive removed the dead connection: the call dials, and the host is gone"), on, res.NextCall)
	off, wheel := kernelRow(fmt.Sprintf("6. next call at %v, keepalive off: the dead one, tcp_retries2 %d, then a replay", next, in.Retries2),
		k.DataGiveUp(in.Retries2)+fresh.Total, shifted(k.DataGiveUps(in.Retries2), fresh.Total), fresh.Outcome, res.NoKeepalive, tol)
	off.Server = orErr(join(reuseNote(res.NoKeepalive, true, "the pool still holds the dead connection; net/http replays the GET when the kernel gives up"), wheel), off, res.NoKeepalive)
	return []results.Row{ns(killed), ns(on), ns(off)}
}

// reuseNote is note, or what went differently when the call did not take the connection
// the model says (reused, or a new one).
func reuseNote(s vanish.Sample, reused bool, note string) string {
	if s.Outcome != "" && s.Reused != reused {
		return fmt.Sprintf("reused %v, want %v; %s", s.Reused, reused, note)
	}
	return note
}

// http2Rows are the rows of Go's HTTP/2 on a pooled connection whose peer vanished.
func (v *Vanish) http2Rows(res vanish.HTTP2Result, k model.Kernel, r2 int, tol time.Duration, ns func(results.Row) results.Row) []results.Row {
	idle := res.Ping.Idle
	if idle == 0 {
		idle = vanishIdle
	}
	// The health check closes the connection SendPingTimeout + PingTimeout after the last
	// frame read, on Go's timers; the call started idle after it. The kernel may give up first.
	lost := model.HTTP2PingGiveUp(v.SendPingTimeout, v.PingTimeout) - idle
	name := fmt.Sprintf("7. go HTTP/2, SendPingTimeout %v + PingTimeout %v", v.SendPingTimeout, v.PingTimeout)
	var ping results.Row
	if g := k.DataGiveUp(r2); g < lost {
		var wheel string
		ping, wheel = kernelRow(name, g, k.DataGiveUps(r2), vocab.KernelTimeout, res.Ping.Sample, tol)
		ping.Server = orErr(http2Note(res.Ping, join(fmt.Sprintf("tcp_retries2 %d gives up before the health check", r2), wheel)), ping, res.Ping.Sample)
	} else {
		ping = sampleRow(name, lost, vocab.Failed, res.Ping.Sample)
		if ping.Outcome == vocab.Failed && !res.Ping.PingLost {
			ping.Outcome = results.State("error, not the health check")
		}
		ping.Server = orErr(http2Note(res.Ping, fmt.Sprintf("closed at the last frame + %v + %v (the call started %v after it): \"http2: client connection lost\"",
			v.SendPingTimeout, v.PingTimeout, idle.Round(time.Millisecond))), ping, res.Ping.Sample)
	}

	kern, wheel := kernelRow(fmt.Sprintf("7. go HTTP/2, no health check: tcp_retries2 %d", r2),
		k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.KernelCall.Sample, tol)
	kern.Server = orErr(http2Note(res.KernelCall, join(fmt.Sprintf("the kernel decides; at tcp_retries2 %d the model says %s", model.DataRetries, secs(k.DataGiveUp(model.DataRetries))), wheel)), kern, res.KernelCall.Sample)

	p := k.Predict(model.Downstream{Dropped: true}, model.Limits{Deadline: v.Deadline}, false, 0, 0, r2)
	dl := sampleRow(fmt.Sprintf("7. go HTTP/2, no health check, deadline %v", v.Deadline), p.Total, p.Outcome, res.Deadline.Sample)
	dl.Server = orErr(http2Note(res.Deadline, "its own deadline, long before the kernel"), dl, res.Deadline.Sample)
	return []results.Row{ns(ping), ns(kern), ns(dl)}
}

// http2Note is note, or what was wrong with the connection: not HTTP/2, or not the pooled one.
func http2Note(s vanish.HTTP2Sample, note string) string {
	switch {
	case s.Outcome == "":
		return note
	case !s.HTTP2:
		return "not HTTP/2; " + note
	case !s.Reused:
		return "not on the pooled connection; " + note
	}
	return note
}

// netnsRow says whether the namespace rows could run. Without namespaces it is skipped, unless
// RequireNetns, which makes it fail.
func (v *Vanish) netnsRow(err error) results.Row {
	r := results.Row{Name: "0. network namespaces of labrun's own (unprivileged user + network)",
		ExpectedOutcome: results.State("available"), Outcome: results.State("available"),
		Server: "tcp_retries2 of their own, a veth pair whose server end goes down"}
	if err != nil {
		r.Outcome, r.Server = results.State("unavailable"), err.Error()
		if !v.RequireNetns {
			r.Skipped = "unavailable here (--require-netns makes it a failure): " + err.Error()
		}
	}
	return r
}

// staleRow is a row of the stale check's verdict on a connection whose peer went away as gone.
func staleRow(name string, gone model.PeerGone, healthy bool, reason string) results.Row {
	r := results.Row{Name: name, ExpectedOutcome: staleWord(model.StaleCheckPasses(gone)), Outcome: staleWord(healthy),
		Server: "a read that does not wait"}
	if reason != "" {
		r.Server += ": " + reason
	} else if healthy {
		r.Server += ": nothing to read"
	}
	return r
}

func staleWord(healthy bool) vocab.Outcome {
	if healthy {
		return results.State("healthy")
	}
	return results.State("stale")
}

// sampleRow is the row of one measured dial or call: the expected time and outcome beside the
// measured ones.
func sampleRow(name string, want time.Duration, wantOut vocab.Outcome, s vanish.Sample) results.Row {
	out := s.Outcome
	if s.KernelTimeout {
		out = vocab.KernelTimeout // the measured error is ETIMEDOUT: the kernel gave up
	}
	return results.Row{Name: name, ExpectedMs: expectedMs(want), ExpectedOutcome: wantOut, ExpectedCalls: 1,
		MeasuredMs: results.Ms(s.Elapsed), Outcome: out, Calls: 1}
}

// kernelRow is the row of a call whose end a chain of kernel timers decides. Each timer fires
// late by anything from one tick to its wheel level's granularity (a quarter of a second for a
// timer 2 s or more ahead at HZ = 250): the model gives that as a window, and the row's
// expected time is the window's average with a margin of its own, half the window plus
// kernelSlack (results.Row.ToleranceMs), stated in the expected column. On a knife edge the
// kernel may also miss the budget at one expiry and give up at the next: the model then gives
// two windows, and the row is judged against the one nearer the measurement, a time the model
// computed either way. The note names the windows when they matter.
func kernelRow(name string, avg time.Duration, ws []model.Window, out vocab.Outcome, s vanish.Sample, tol time.Duration) (results.Row, string) {
	w := ws[0]
	for _, c := range ws[1:] {
		if s.Outcome != "" && absDur(s.Elapsed-c.Average) < absDur(s.Elapsed-w.Average) {
			w = c
		}
	}
	want := w.Average
	if len(ws) == 1 {
		want = avg
	}
	var spans []string
	wide := false
	for _, w := range ws {
		spans = append(spans, secs(w.Soonest)+" to "+secs(w.Latest))
		wide = wide || w.Latest-w.Soonest > tol
	}
	note := ""
	switch {
	case len(ws) > 1:
		note = "knife edge, the model allows " + strings.Join(spans, " or ")
	case wide:
		note = "timer wheel: " + spans[0]
	}
	row := sampleRow(name, want, out, s)
	row.ToleranceMs = results.Ms(max(want-w.Soonest, w.Latest-want) + kernelSlack)
	return row, note
}

// kernelSlack is what a kernel row's margin allows beyond the timer wheel's window: the
// scheduling of the process that measures (5 % or 20 ms, the margin, whichever is
// larger, is far above it; 20 ms is what the measurements needed).
const kernelSlack = 20 * time.Millisecond

// shifted moves every window of ws by d.
func shifted(ws []model.Window, d time.Duration) []model.Window {
	out := make([]model.Window, len(ws))
	for i, w := range ws {
		out[i] = w.Shift(d)
	}
	return out
}

// orErr is note, followed by the measured error when the outcome is not the expected one.
func orErr(note string, r results.Row, s vanish.Sample) string {
	if r.Outcome != r.ExpectedOutcome && s.Err != "" {
		return note + "; got: " + s.Err
	}
	return note
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// synDocumented is a SYN row's documented figure, 2^(n+1) - 1 s, and the extrapolation to the
// default count: documented (127 s) and by k's rules.
func synDocumented(n int, k model.Kernel) (string, *float64) {
	doc := model.SYNGiveUpAfter(n)
	return fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.SYNRetries, secs(model.SYNGiveUp), secs(k.SYNGiveUp(model.SYNRetries))), results.Ms(doc)
}

// dataDocumented is a dropped-connection row's documented figure, the textbook budget for r,
// and the extrapolation to the default tcp_retries2: documented (924.6 s) and by k's rules.
func dataDocumented(r int, k model.Kernel) (string, *float64) {
	doc := model.DataGiveUpAfter(r)
	return fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.DataRetries, secs(model.DataGiveUp), secs(k.DataGiveUp(model.DataRetries))), results.Ms(doc)
}

// secs writes a time in seconds, to the millisecond: "3 s", "6.72 s", "924.6 s".
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// join joins the non-empty notes with "; ".
func join(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// sleepCtx waits d, or until ctx is done and returns its error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kernelText describes the connection's timers for a note: "RTO 204ms, tail loss probe first".
func kernelText(k model.Kernel) string {
	if k.TLP {
		return fmt.Sprintf("RTO %v, tail loss probe first", k.RTO)
	}
	return fmt.Sprintf("RTO %v", k.RTO)
}
