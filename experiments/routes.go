package experiments

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Routes is experiment E: a timeout that seems ignored. A host name resolves to three
// loopback addresses, none of which answers a SYN. OkHttp gives every address (route) its own
// connect timeout, so a 1 s connect timeout takes 3 s unless a callTimeout caps it; net/http
// shares one dial budget among the addresses, so the first one takes it all; HttpClient 5, like
// OkHttp, tries each address with the full timeout. It runs every profile by design
// (FixedProfiles), so it takes no --client.
type Routes struct {
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
}

// routeHost is the name the experiment's resolver answers with three addresses.
const routeHost = "inventory.test"

var routeAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}

// NewRoutes returns experiment E with its default parameters.
func NewRoutes() *Routes {
	return &Routes{ConnectTimeout: time.Second, CallTimeout: 1500 * time.Millisecond}
}

// Info implements Experiment.
func (*Routes) Info() Info {
	return Info{
		Name:  "exp-e",
		Topic: "routes",
		Title: "a timeout that seems ignored",
		Description: "A host name resolves to three loopback addresses (127.0.0.2, .3, .4), none of " +
			"which answers a SYN: each is a listener whose accept queue is full, which Linux " +
			"treats like a host that is down. labrun resolves the name itself (a DNS server on " +
			"loopback). OkHttp makes every address a route with its own connect timeout: 1 s " +
			"becomes 3 s, unless callTimeout caps the call or retryOnConnectionFailure is off. " +
			"Go's net/http gives the whole dial one budget and splits it: each address gets an " +
			"equal share of what is left but at least 2 s (net/dial.go, partialDeadline), so with " +
			"1 s the first address takes all of it and the others are never tried. HttpClient 5 " +
			"tries each address with the full timeout inside one connect. It runs every profile " +
			"by design and takes no --client.",
		Examples: []string{"labrun exp-e", "labrun exp-e --connect-timeout 500ms --call-timeout 800ms"},
	}
}

// Profiles implements FixedProfiles.
func (*Routes) Profiles() []string { return []string{ProfileOkHttp, ProfileGo, ProfileHC5} }

// Params implements Experiment.
func (r *Routes) Params() []Param {
	return []Param{
		{Name: "connect-timeout", Usage: "connect timeout of every client", Duration: &r.ConnectTimeout, MaxDuration: 10 * time.Second},
		{Name: "call-timeout", Usage: "OkHttp callTimeout of the capped row", Duration: &r.CallTimeout, MaxDuration: 30 * time.Second},
	}
}

// Check implements Checker.
func (r *Routes) Check() error {
	if r.ConnectTimeout == 0 {
		return fmt.Errorf("--connect-timeout must be set: without one the kernel gives up after 127 s per address")
	}
	return nil
}

// Run implements Experiment.
func (r *Routes) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(r, opt, func(run *results.Run) error {
		url, resolver, stop, err := downHost()
		if err != nil {
			return err
		}
		defer stop()

		down := model.Downstream{HostDown: true, Routes: len(routeAddrs)}
		row := func(name, profile string, s lab.Spec) callCase {
			s.Resolver = resolver
			return callCase{Name: name, Profile: profile, Limits: s, URL: url, Downstream: &down, Counts: countConnections,
				Note: func(_ []fakesrv.Request, dials int) string {
					return fmt.Sprintf("%d addresses, none answers; %s", len(routeAddrs), vocab.Plural(dials, "attempt"))
				}}
		}
		cases := []callCase{
			row("okhttp: connect timeout per route, no callTimeout", ProfileOkHttp, lab.Spec{ConnectTimeout: r.ConnectTimeout}),
			row("okhttp: the same, callTimeout "+r.CallTimeout.String(), ProfileOkHttp, lab.Spec{ConnectTimeout: r.ConnectTimeout, Deadline: r.CallTimeout}),
			row("okhttp: retryOnConnectionFailure off", ProfileOkHttp, lab.Spec{ConnectTimeout: r.ConnectTimeout, NoRouteRetry: true}),
			row("go: net.Dialer.Timeout "+r.ConnectTimeout.String()+" for the whole dial", ProfileGo, lab.Spec{ConnectTimeout: r.ConnectTimeout}),
			row("hc5: every address in turn, one connect", ProfileHC5, lab.Spec{ConnectTimeout: r.ConnectTimeout}),
		}
		return runCases(ctx, opt, run, cases, len(cases))
	})
}

// downHost starts a host that is down under a name: on each of routeAddrs a listener that
// drops SYNs, all on one port, and a DNS server that resolves routeHost to them all. It
// returns the URL to call and the resolver that knows the name; stop closes them all.
func downHost() (url string, resolver *net.Resolver, stop func(), err error) {
	var holes []*fakesrv.Blackhole
	stop = func() {
		for _, h := range holes {
			h.Close()
		}
	}
	port := 0
	for _, ip := range routeAddrs {
		h, err := fakesrv.NewBlackhole(ip, port)
		if err != nil {
			stop()
			return "", nil, nil, fmt.Errorf("an address that drops SYNs: %w", err)
		}
		holes, port = append(holes, h), h.Port
	}
	dns, err := fakesrv.NewDNS(map[string][]string{routeHost: routeAddrs})
	if err != nil {
		stop()
		return "", nil, nil, err
	}
	closeHoles := stop
	stop = func() {
		dns.Close()
		closeHoles()
	}
	return "http://" + routeHost + ":" + strconv.Itoa(port) + "/", dns.Resolver(), stop, nil
}
