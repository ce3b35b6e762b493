package vanish

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
	"github.com/labrun/labrun/experiments/internal/lab"
	measure "github.com/labrun/labrun/experiments/internal/vanish"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/results"
)

// Vanish is experiment I: peers that vanish, measured (docs/vanish.md). The documented figures
// for a powered-off peer (127 s to give up a connect, 924.6 s a request on a pooled connection)
// are Linux timers, measured scaled down beside the model's value and its extrapolation, then
// what clients do about them: connect and read timeouts, deadlines, HttpClient 5's stale check,
// TCP keepalive and Go's HTTP/2 health check. Rows needing a network namespace of labrun's own
// (package netns) are skipped, with the reason, where it is unavailable, unless RequireNetns.
type Vanish struct {
	// SYNRetries and Retries2 are comma-separated counts, a row and a namespace each.
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

	// namespaces reports whether the namespace rows can run (nil: netns.Available); tests set it.
	namespaces func() error
}

// New returns experiment I with docs/vanish.md's scaled-down kernel.
func New() *Vanish {
	return &Vanish{
		SYNRetries: "1,2", Retries2: "2,3,4",
		ConnectTimeout: time.Second, ReadTimeout: 250 * time.Millisecond, Deadline: time.Second,
		KeepaliveIdle: time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 3,
		SendPingTimeout: time.Second, PingTimeout: 500 * time.Millisecond,
	}
}

// Info implements Experiment.
func (*Vanish) Info() lab.Info {
	return lab.Info{
		Name:  "exp-i",
		Topic: "vanish",
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
func (*Vanish) Profiles() []string { return []string{lab.ProfileHC5, lab.ProfileOkHttp, lab.ProfileGo} }

// Params implements Experiment.
func (v *Vanish) Params() []lab.Param {
	return []lab.Param{
		{Name: "syn-retries", Usage: fmt.Sprintf("SYN retries of the host-down rows, comma-separated, each 1..%d (Linux: %d, 127 s)", measure.MaxSYNRetries, model.SYNRetries), String: &v.SYNRetries},
		{Name: "tcp-retries2", Usage: fmt.Sprintf("tcp_retries2 of the dropped-connection rows, comma-separated, each 0..%d (Linux: %d, 924.6 s)", measure.MaxRetries2, model.DataRetries), String: &v.Retries2},
		{Name: "connect-timeout", Usage: "connect timeout of the clients (the host is down)", Duration: &v.ConnectTimeout, MaxDuration: measure.MaxWait},
		{Name: "read-timeout", Usage: "read timeout on the dead pooled connection", Duration: &v.ReadTimeout, MaxDuration: measure.MaxWait},
		{Name: "deadline", Usage: "whole-call deadline on the dead pooled connection", Duration: &v.Deadline, MaxDuration: measure.MaxWait},
		{Name: "keepalive-idle", Usage: "TCP keepalive: idle time before the first probe (whole seconds)", Duration: &v.KeepaliveIdle, MaxDuration: measure.MaxKeepalive},
		{Name: "keepalive-interval", Usage: "TCP keepalive: time between probes (whole seconds)", Duration: &v.KeepaliveInterval, MaxDuration: measure.MaxKeepalive},
		{Name: "keepalive-count", Usage: "TCP keepalive: unanswered probes before the kernel gives up", Int: &v.KeepaliveCount, Min: 1, Max: 5},
		{Name: "send-ping-timeout", Usage: "Go HTTP/2: PING after this long without a frame (HTTP2Config.SendPingTimeout)", Duration: &v.SendPingTimeout, MaxDuration: measure.MaxWait},
		{Name: "ping-timeout", Usage: "Go HTTP/2: close the connection when the PING is unanswered this long", Duration: &v.PingTimeout, MaxDuration: measure.MaxWait},
		{Name: "require-netns", Usage: "fail, rather than skip, the rows that need network namespaces", Bool: &v.RequireNetns},
	}
}

// vanishIdle is the pooled connections' idle time after the peer vanished: the jobs' default.
var vanishIdle = measure.DefaultDropped().Inactivity

// Check implements Checker.
func (v *Vanish) Check() error {
	if _, err := counts("syn-retries", v.SYNRetries, 1, measure.MaxSYNRetries); err != nil {
		return err
	}
	if _, err := counts("tcp-retries2", v.Retries2, 0, measure.MaxRetries2); err != nil {
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
	if g := model.KeepaliveGiveUp(v.KeepaliveIdle, v.KeepaliveInterval, v.KeepaliveCount); g > measure.MaxKeepalive {
		return fmt.Errorf("--keepalive-idle + --keepalive-count x --keepalive-interval must be at most %v (in whole seconds), got %v", measure.MaxKeepalive, g)
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

// vanishJobTime bounds each measurement (the longest takes under 20 s).
const vanishJobTime = 45 * time.Second

// vanishStagger separates the namespace children's starts: overlapping forks of the whole
// process (CLONE_NEWUSER rules out vfork) stall the parent (docs/vanish.md).
const vanishStagger = 150 * time.Millisecond

// vanishHosts are the down host's loopback addresses, all on one port, apart from exp-e's.
var vanishHosts = []string{"127.0.0.5", "127.0.0.6", "127.0.0.7"}

const (
	vanishOne   = "one.vanish.test"
	vanishThree = "three.vanish.test"
)

// vanishMeasured is everything exp-i measured, each field written by one of Run's goroutines
// and read after they all ended.
type vanishMeasured struct {
	netns   error        // nil when the namespace rows can run
	host    model.Kernel // the calling namespace's SYN rules
	clients []vanishCall
	ka      measure.KeepaliveResult
	h2      measure.HTTP2Result

	mu       sync.Mutex // guards the maps
	dials    map[int]measure.Sample
	hostDown map[int]measure.HostDownResult
	dropped  map[int]measure.DroppedResult
}

func set[V any](mu *sync.Mutex, m map[int]V, k int, v V) {
	mu.Lock()
	defer mu.Unlock()
	m[k] = v
}

// vanishClient is a connect-timeout row: a profile against a name of one or three addresses,
// none answering.
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
		{"2. host down, hc5, connect timeout " + ct + ", one address", lab.ProfileHC5, vanishOne, 1},
		{"2. host down, okhttp, connect timeout " + ct + ", one address", lab.ProfileOkHttp, vanishOne, 1},
		{"2. host down, okhttp, connect timeout " + ct + " per address, three addresses", lab.ProfileOkHttp, vanishThree, 3},
		{"2. host down, go, net.Dialer.Timeout " + ct + ", one address", lab.ProfileGo, vanishOne, 1},
	}
}

// Run implements Experiment, running every measurement at once, each bounded. When ctx ends
// first it returns ctx's error, every child reaped and listener closed.
func (v *Vanish) Run(ctx context.Context, opt lab.Options) (results.Run, error) {
	if err := lab.CheckParams(v); err != nil {
		return results.Run{}, err
	}
	if err := ctx.Err(); err != nil {
		return results.Run{}, err
	}
	syns, _ := counts("syn-retries", v.SYNRetries, 1, measure.MaxSYNRetries)
	r2s, _ := counts("tcp-retries2", v.Retries2, 0, measure.MaxRetries2)
	available := v.namespaces
	if available == nil {
		available = netns.Available
	}
	m := &vanishMeasured{netns: available(), host: measure.HostKernel(), dials: map[int]measure.Sample{},
		clients: make([]vanishCall, len(v.clients())), hostDown: map[int]measure.HostDownResult{},
		dropped: map[int]measure.DroppedResult{}}

	down, err := newDeadHost()
	if err != nil {
		return results.Run{}, err
	}
	defer down.close()

	jobs := v.jobs(m, down, syns, r2s)
	var total time.Duration // the model's end of the last measurement
	for _, j := range jobs {
		total = max(total, j.start+j.expect)
	}
	opt.Step(total, "%s · %d measurements at once", v.Info().Name, len(jobs))
	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	for _, j := range jobs {
		g.Go(func() error {
			if err := clock.Sleep(gctx, j.start); err != nil {
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
			opt.Step(0, "%s · %d/%d measured: %s", v.Info().Name, done, len(jobs), j.name)
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

	run := lab.NewRun(v, opt)
	run.Rows = v.rows(m, syns, r2s, opt.Tolerance)
	for i, c := range v.clients() {
		run.Calls = append(run.Calls, lab.Timeline(c.name, m.clients[i].res, 0))
	}
	run.Finish(opt.Tolerance)
	return run, nil
}

// vanishJob is one measurement, from start on with its own bound, writing its own part of
// vanishMeasured.
type vanishJob struct {
	name   string
	start  time.Duration
	expect time.Duration // the model's time, once started
	run    func(ctx context.Context) error
}

// jobs lists the measurements: loopback ones at once, namespace children vanishStagger apart,
// longest first.
func (v *Vanish) jobs(m *vanishMeasured, down *deadHost, syns, r2s []int) []vanishJob {
	k := model.LoopbackKernel()
	var jobs []vanishJob
	for _, n := range syns {
		jobs = append(jobs, vanishJob{name: fmt.Sprintf("TCP_SYNCNT %d on loopback", n), expect: m.host.SYNGiveUp(n),
			run: func(ctx context.Context) error {
				set(&m.mu, m.dials, n, measure.DialDown(ctx, down.addr, n, 0))
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
				res, err := measure.HostDown(ctx, measure.HostDownInput{SYNRetries: n, ConnectTimeout: v.ConnectTimeout})
				set(&m.mu, m.hostDown, n, res)
				return err
			}})
	}
	for _, r := range r2s {
		// The longest call is the GET net/http replays after the kernel gave up.
		children = append(children, vanishJob{name: fmt.Sprintf("tcp_retries2 %d", r), expect: k.DataGiveUp(r) + v.ConnectTimeout,
			run: func(ctx context.Context) error {
				res, err := measure.Dropped(ctx, measure.DroppedInput{Retries2: r, ReadTimeout: v.ReadTimeout,
					Deadline: v.Deadline, ConnectTimeout: v.ConnectTimeout, Inactivity: vanishIdle})
				set(&m.mu, m.dropped, r, res)
				return err
			}})
	}
	ka := v.keepaliveInput(r2s)
	children = append(children, vanishJob{name: "keepalive", expect: ka.NextCallAt() + k.DataGiveUp(ka.Retries2) + v.ConnectTimeout,
		run: func(ctx context.Context) (err error) {
			m.ka, err = measure.Keepalive(ctx, ka)
			return err
		}})
	h2 := measure.HTTP2Input{Retries2: slices.Min(r2s), SendPingTimeout: v.SendPingTimeout, PingTimeout: v.PingTimeout,
		Inactivity: vanishIdle, Deadline: v.Deadline}
	children = append(children, vanishJob{name: "HTTP/2", expect: h2.Inactivity + max(k.DataGiveUp(h2.Retries2), model.HTTP2PingGiveUp(h2.SendPingTimeout, h2.PingTimeout)),
		run: func(ctx context.Context) (err error) {
			m.h2, err = measure.HTTP2(ctx, h2)
			return err
		}})
	slices.SortStableFunc(children, func(a, b vanishJob) int { return cmp.Compare(b.expect, a.expect) })
	for i := range children {
		children[i].start = time.Duration(i) * vanishStagger
	}
	return append(jobs, children...)
}

// keepaliveInput is the keepalive job's input, with the smallest tcp_retries2.
func (v *Vanish) keepaliveInput(r2s []int) measure.KeepaliveInput {
	return measure.KeepaliveInput{Idle: v.KeepaliveIdle, Interval: v.KeepaliveInterval, Count: v.KeepaliveCount,
		Retries2: slices.Min(r2s), ConnectTimeout: v.ConnectTimeout}
}

func (v *Vanish) connect(ctx context.Context, c vanishClient, down *deadHost) (vanishCall, error) {
	b, err := lab.Build(c.profile, lab.Spec{ConnectTimeout: v.ConnectTimeout, Resolver: down.resolver})
	if err != nil {
		return vanishCall{}, err
	}
	defer b.C.Close()
	p := model.Predict(model.Downstream{HostDown: true, Routes: c.routes}, b.Limits, true, 0)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, down.url(c.host), nil)
	if err != nil {
		return vanishCall{}, err
	}
	res, _ := b.C.Do(ctx, req)
	return vanishCall{p: p, res: res}, ctx.Err()
}

// deadHost is a host down on loopback: listeners dropping SYNs on vanishHosts, and a DNS server
// resolving vanishOne to the first, vanishThree to all.
type deadHost struct {
	addr     string // for a plain dial
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

func (d *deadHost) url(name string) string { return "http://" + net.JoinHostPort(name, d.port) + "/" }
