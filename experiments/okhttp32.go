package experiments

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// OkHttp32 is experiment J, the OkHttp seed's own bug: "a 30 s timeout, yet the app shows
// Loading forever". OkHttp 3.0 to 3.2 recovered every SocketTimeoutException, a read timeout
// after the request was sent included (okhttp parent-3.2.0: RealCall.getResponse calls
// HttpEngine.recover(e, null); StreamAllocation.recover gives up only when the route selector
// has no next route; isRecoverable treats every SocketTimeoutException as recoverable). A call
// that started on a pooled connection has consumed no route, so each read timeout moves it to
// the next idle pooled connection, then to a new connection per route: each attempt waits a
// full read timeout, and the server executes the request each time. 3.3.0 (pull request 2479)
// recovers a SocketTimeoutException only while connecting. It runs okhttp@3.2 and okhttp by
// design (FixedProfiles).
type OkHttp32 struct {
	ReadTimeout time.Duration
	Delay       time.Duration
	Pooled      int
}

// NewOkHttp32 returns experiment J with its default parameters: a reservation that takes 3 s,
// a read timeout of 1 s, five idle pooled connections.
func NewOkHttp32() *OkHttp32 {
	return &OkHttp32{ReadTimeout: time.Second, Delay: 3 * time.Second, Pooled: 5}
}

// upAddrs are the addresses of the host with three routes; apart from exp-e's, since
// experiments run at once.
var upAddrs = []string{"127.0.0.12", "127.0.0.13", "127.0.0.14"}

// Info implements Experiment.
func (*OkHttp32) Info() Info {
	return Info{
		Name:  "exp-j",
		Topic: "okhttp32",
		Title: "OkHttp 3.2 re-sends after a read timeout",
		Description: "The OkHttp seed's own bug. A POST reserves stock and the server takes 3 s; the " +
			"read timeout is 1 s. OkHttp 3.0 to 3.2 recovered a read timeout after the request was " +
			"sent like any I/O error: a call that started on a pooled connection moves to the next " +
			"idle pooled connection, then to a new connection per route, waiting a full read " +
			"timeout each time, and the server reserves each time: with five pooled connections " +
			"and one address, 6 attempts, 6 s and 6 reservations where the app expected 1 s. " +
			"retryOnConnectionFailure(false) or OkHttp 3.3 (which recovers a timeout only while " +
			"connecting) ends it after the first read timeout. It runs okhttp@3.2 and okhttp by " +
			"design and takes no --client.",
		Examples: []string{"labrun exp-j", "labrun exp-j --pooled 2 --delay 2s", "labrun predict --defaults okhttp --read-timeout 1s --delay 3s"},
	}
}

// Profiles implements FixedProfiles.
func (*OkHttp32) Profiles() []string { return []string{ProfileOkHttp32, ProfileOkHttp} }

// Params implements Experiment.
func (o *OkHttp32) Params() []Param {
	return []Param{
		{Name: "read-timeout", Usage: "OkHttp readTimeout", Duration: &o.ReadTimeout, MaxDuration: 5 * time.Second},
		{Name: "delay", Usage: "server time to reserve (longer than the read timeout)", Duration: &o.Delay, MaxDuration: 10 * time.Second},
		{Name: "pooled", Usage: "idle pooled connections before the call", Int: &o.Pooled, Min: 1, Max: 8},
	}
}

// Check implements Checker.
func (o *OkHttp32) Check() error {
	if o.ReadTimeout == 0 || o.Delay <= o.ReadTimeout {
		return fmt.Errorf("--delay (%v) must be longer than --read-timeout (%v), which must be set: the read timeout is the point", o.Delay, o.ReadTimeout)
	}
	return nil
}

// okhttp32Row is one row: which client, how many idle pooled connections, how many routes.
type okhttp32Row struct {
	name    string
	profile string
	pooled  int
	routes  int
	noRetry bool // retryOnConnectionFailure(false)
}

func (o *OkHttp32) rows() []okhttp32Row {
	pooled := strconv.Itoa(o.Pooled) + " pooled connections"
	return []okhttp32Row{
		{"okhttp@3.2: fresh client, 1 address", ProfileOkHttp32, 0, 1, false},
		{"okhttp@3.2: " + pooled + ", 1 address", ProfileOkHttp32, o.Pooled, 1, false},
		{"okhttp@3.2: the same, retryOnConnectionFailure(false)", ProfileOkHttp32, o.Pooled, 1, true},
		{"okhttp@3.2: fresh client, 3 addresses", ProfileOkHttp32, 0, len(upAddrs), false},
		{"okhttp 3.3+: fresh client, 1 address", ProfileOkHttp, 0, 1, false},
		{"okhttp 3.3+: " + pooled + ", 1 address", ProfileOkHttp, o.Pooled, 1, false},
		{"okhttp 3.3+: the same, retryOnConnectionFailure(false)", ProfileOkHttp, o.Pooled, 1, true},
	}
}

// Run implements Experiment. The rows run at once, each with its own servers and client, so
// the experiment takes about as long as its longest row.
func (o *OkHttp32) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(o, opt, func(run *results.Run) error {
		rows := o.rows()
		out := make([]results.Row, len(rows))
		calls := make([]results.Call, len(rows))
		// Every row first starts its servers and warms its pool; the measured calls then start
		// together, so that no row's call competes with another's set-up for the two cores.
		var prepared sync.WaitGroup
		prepared.Add(len(rows))
		g, gctx := errgroup.WithContext(ctx)
		for i, row := range rows {
			g.Go(func() error {
				done := sync.OnceFunc(prepared.Done) // also on an early error: nobody waits forever
				defer done()
				r, c, err := o.measure(gctx, opt, row, func() { done(); prepared.Wait() })
				out[i], calls[i] = r, c
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		run.Rows, run.Calls = out, calls
		return nil
	})
}

// measure runs one row: servers for its routes, a client of its profile with its pooled
// connections warmed, then, once ready returns, one POST reservation.
func (o *OkHttp32) measure(ctx context.Context, opt Options, row okhttp32Row, ready func()) (out results.Row, call results.Call, err error) {
	h, err := newUpHost(upAddrs[:row.routes])
	if err != nil {
		return out, call, err
	}
	defer h.close()
	b, err := lab.Build(row.profile, lab.Spec{ReadTimeout: o.ReadTimeout, NoRouteRetry: row.noRetry, Resolver: h.resolver})
	if err != nil {
		return out, call, err
	}
	defer b.C.Close()
	if row.pooled > 0 {
		// Warm-up calls go to the first address: the one a fresh route selector tries first.
		if _, err := lab.WarmURL(ctx, b, h.servers[0], h.url, row.pooled); err != nil {
			return out, call, err
		}
	}
	p := model.Simulate(model.Scenario{Calls: 1, Pool: max(row.pooled, 1), Idle: row.pooled,
		Downstream: model.Downstream{Delay: o.Delay, Method: http.MethodPost, Routes: row.routes}, Limits: b.Limits})[0]
	ready()
	opt.progress(p.Total, "%s · %s", o.Info().Name, row.name)
	beh := fakesrv.Behaviour{Delay: o.Delay, Order: "seed-" + strconv.Itoa(row.pooled)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url+beh.Path(), nil)
	if err != nil {
		return out, call, err
	}
	res, _ := b.C.Do(ctx, req)
	if err := ctx.Err(); err != nil {
		return out, call, err
	}
	reserved, accepted := h.counts(ctx)
	addrs := "1 address"
	if row.routes > 1 {
		addrs = fmt.Sprintf("%d addresses (each attempt resolves the name: a few ms)", row.routes)
	}
	return lab.Judged(row.name, lab.Called(p, res),
		lab.Executions(results.Count(p.Executions), results.Count(reserved)),
		lab.Connections(results.Count(p.Connects), results.Count(accepted)),
		lab.Saw(fmt.Sprintf("reserved %s; %s; %s", vocab.Plural(reserved, "time"), addrs, vocab.Plural(len(res.Attempts), "attempt")))), lab.Timeline(row.name, res, 0), nil
}

// upHost is a host name that resolves to several loopback addresses, each with a fake server
// on the same port.
type upHost struct {
	servers  []*fakesrv.Server
	dns      *fakesrv.DNS
	resolver *net.Resolver
	url      string
}

// upHostName is the name the row's resolver answers with its addresses.
const upHostName = "push.test"

// newUpHost starts a fake server on each of ips, all on one port (tried a few times: another
// process may hold the port on one of them), and a DNS server that resolves upHostName to
// them. A host of one address is called by its address: no name spares every attempt a
// loopback DNS query (2 to 4 ms) that the model does not count.
func newUpHost(ips []string) (*upHost, error) {
	var err error
	for try := 0; try < 5; try++ {
		var h *upHost
		if h, err = tryUpHost(ips); err == nil {
			return h, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("start servers on %v: %w", ips, err)
}

func tryUpHost(ips []string) (*upHost, error) {
	h := &upHost{}
	port := "0"
	for _, ip := range ips {
		s, err := fakesrv.New(fakesrv.WithAddr(net.JoinHostPort(ip, port)))
		if err != nil {
			h.close()
			return nil, err
		}
		h.servers = append(h.servers, s)
		_, port, _ = net.SplitHostPort(s.URL[len("http://"):])
	}
	if len(ips) == 1 {
		h.url = h.servers[0].URL
		return h, nil
	}
	dns, err := fakesrv.NewDNS(map[string][]string{upHostName: ips})
	if err != nil {
		h.close()
		return nil, err
	}
	h.dns, h.resolver = dns, dns.Resolver()
	h.url = "http://" + net.JoinHostPort(upHostName, port)
	return h, nil
}

// counts returns the reservations and connections of every server, once their requests have
// finished.
func (h *upHost) counts(ctx context.Context) (reserved, accepted int) {
	for _, s := range h.servers {
		lab.Settled(ctx, s, 0)
		reserved += s.TotalReservations()
		accepted += s.ConnsAccepted()
	}
	return reserved, accepted
}

func (h *upHost) close() {
	for _, s := range h.servers {
		s.Close()
	}
	if h.dns != nil {
		h.dns.Close()
	}
}
