//go:build linux

package vanish

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
)

// Jobs returns the package's jobs, for netns.MaybeChild.
func Jobs() netns.Jobs {
	return netns.Jobs{
		JobHostDown:  netns.Func(hostDown),
		JobDropped:   netns.Func(dropped),
		JobKeepalive: netns.Func(keepalive),
		JobHTTP2:     netns.Func(http2Job),
	}
}

// closeWait bounds the wait for the FIN of a connection the server closed.
const closeWait = 2 * time.Second

// hostDown measures connects to a vanished server: TCP_SYNCNT, tcp_syn_retries through
// labrun's client, and connect timeouts.
func hostDown(ctx context.Context, in HostDownInput) (HostDownResult, error) {
	out := HostDownResult{Input: in}
	if err := in.Check(); err != nil {
		return out, err
	}
	if err := setSysctls(map[string]int{"net.ipv4.tcp_syn_retries": in.SYNRetries}); err != nil {
		return out, err
	}
	// Before Linux 6.5 there are no linear timeouts, as 0 asks.
	if _, err := netns.ReadSysctl("net.ipv4.tcp_syn_linear_timeouts"); err == nil || in.LinearTimeouts != 0 {
		if err := setSysctls(map[string]int{"net.ipv4.tcp_syn_linear_timeouts": in.LinearTimeouts}); err != nil {
			return out, err
		}
	}
	p, err := netns.NewPair(ctx)
	if err != nil {
		return out, err
	}
	defer p.Close()
	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	out.Kernel = model.Kernel{Tick: kernelTick(0), SYNLinearTimeouts: in.LinearTimeouts}
	// Nothing listens on the server: its SYNs never get there.
	addr := net.JoinHostPort(p.Server.String(), "80")
	url := "http://" + addr + "/"

	plain, err := client.New(client.Config{})
	if err != nil {
		return out, err
	}
	defer plain.Close()
	timed, err := client.New(client.Config{ConnectTimeout: in.ConnectTimeout})
	if err != nil {
		return out, err
	}
	defer timed.Close()

	parallel(
		func() { out.Dial = dial(ctx, net.Dialer{Control: netns.SynCount(in.SYNRetries)}, addr) },
		func() { out.DialTimeout = dial(ctx, net.Dialer{Timeout: in.ConnectTimeout}, addr) },
		func() { out.Client = call(ctx, plain, http.MethodGet, url) },
		func() { out.ClientTimeout = call(ctx, timed, http.MethodGet, url) },
	)
	return out, ctx.Err()
}

func dropped(ctx context.Context, in DroppedInput) (DroppedResult, error) {
	out := DroppedResult{Input: in}
	p, srv, stop, err := serverHost(ctx, in.Check, in.Retries2)
	if err != nil {
		return out, err
	}
	defer stop()

	// Every connection carries one exchange before the peer vanishes.
	raw, err := exchange(ctx, net.Dialer{KeepAlive: -1}, srv.addr, "/")
	if err != nil {
		return out, err
	}
	defer raw.Close()
	checked, err := exchange(ctx, net.Dialer{KeepAlive: -1}, srv.addr, "/")
	if err != nil {
		return out, err
	}
	defer checked.Close()
	closed, err := exchange(ctx, net.Dialer{KeepAlive: -1}, srv.addr, "/close")
	if err != nil {
		return out, err
	}
	defer closed.Close()
	if err := waitStale(ctx, closed.conn); err != nil {
		return out, err
	}
	clients, gc, err := warmClients(ctx, in, srv.url)
	for _, c := range clients {
		defer c.Close()
	}
	if gc != nil {
		defer gc.Close()
	}
	if err != nil {
		return out, err
	}
	if out.Kernel, err = connKernel(raw.conn); err != nil {
		return out, err
	}

	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	if err := clock.Sleep(ctx, in.Inactivity); err != nil {
		return out, err
	}
	var reason error
	out.Stale.ClosedHealthy, reason = StaleCheck(closed.conn)
	out.Stale.ClosedReason = errText(reason)
	out.Stale.VanishedHealthy, reason = StaleCheck(checked.conn)
	out.Stale.VanishedReason = errText(reason)

	parallel(
		func() { out.Raw, out.Retransmissions = raw.request(ctx, 0) },
		func() { out.Stale.After, _ = checked.request(ctx, in.ReadTimeout) },
		func() { out.Client = call(ctx, clients[0], http.MethodGet, srv.url) },
		func() { out.ClientPost = call(ctx, clients[1], http.MethodPost, srv.url) },
		func() { out.ReadTimeout = call(ctx, clients[2], http.MethodGet, srv.url) },
		func() { out.Deadline = call(ctx, clients[3], http.MethodGet, srv.url) },
		func() { out.Go = call(ctx, gc, http.MethodGet, srv.url) },
	)
	return out, ctx.Err()
}

// warmClients makes the dropped job's clients, each with one exchange on its pooled connection;
// the caller closes those it gets, also on an error.
func warmClients(ctx context.Context, in DroppedInput, url string) ([]*client.Client, *client.GoClient, error) {
	cfg := client.Config{ConnectTimeout: in.ConnectTimeout}
	get, post, rt, dl := cfg, cfg, cfg, cfg
	rt.ReadTimeout, dl.Deadline = in.ReadTimeout, in.Deadline
	clients := make([]*client.Client, 0, 4)
	for _, c := range []client.Config{get, post, rt, dl} {
		cl, err := client.New(c)
		if err != nil {
			return clients, nil, err
		}
		clients = append(clients, cl)
		if s := call(ctx, cl, http.MethodGet, url); s.Outcome != vocab.OK {
			return clients, nil, fmt.Errorf("first call before the peer vanished: %s", s.Err)
		}
	}
	gc, err := client.NewGo(client.GoConfig{DialTimeout: in.ConnectTimeout})
	if err != nil {
		return clients, nil, err
	}
	if s := call(ctx, gc, http.MethodGet, url); s.Outcome != vocab.OK {
		return clients, gc, fmt.Errorf("first go call before the peer vanished: %s", s.Err)
	}
	return clients, gc, nil
}

func keepalive(ctx context.Context, in KeepaliveInput) (KeepaliveResult, error) {
	out := KeepaliveResult{Input: in}
	p, srv, stop, err := serverHost(ctx, in.Check, in.Retries2)
	if err != nil {
		return out, err
	}
	defer stop()

	ka := net.KeepAliveConfig{Enable: true, Idle: in.Idle, Interval: in.Interval, Count: in.Count}
	withKA := transport(net.Dialer{Timeout: in.ConnectTimeout, KeepAliveConfig: ka})
	defer withKA.CloseIdleConnections()
	without := transport(net.Dialer{Timeout: in.ConnectTimeout, KeepAlive: -1})
	defer without.CloseIdleConnections()
	for _, tr := range []*http.Transport{withKA, without} {
		if s := roundTrip(ctx, tr, srv.url); s.Outcome != vocab.OK {
			return out, fmt.Errorf("first call before the peer vanished: %s", s.Err)
		}
	}
	start := time.Now()
	raw, err := exchange(ctx, net.Dialer{KeepAliveConfig: ka}, srv.addr, "/")
	if err != nil {
		return out, err
	}
	defer raw.Close()
	if out.Idle, out.Interval, out.Count, err = keepaliveSettings(raw.conn); err != nil {
		return out, err
	}
	if out.Kernel, err = connKernel(raw.conn); err != nil {
		return out, err
	}
	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	next := in.NextCallAt()
	parallel(
		func() { out.Killed = raw.idleRead(ctx) },
		func() {
			if clock.Sleep(ctx, next-time.Since(start)) == nil {
				out.NextCall = roundTrip(ctx, withKA, srv.url)
			}
		},
		func() {
			if clock.Sleep(ctx, next-time.Since(start)) == nil {
				out.NoKeepalive = roundTrip(ctx, without, srv.url)
			}
		},
	)
	return out, ctx.Err()
}

func setSysctls(values map[string]int) error {
	for name, v := range values {
		if err := netns.SetSysctl(name, strconv.Itoa(v)); err != nil {
			return err
		}
	}
	return nil
}

func parallel(fs ...func()) {
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(f)
	}
	wg.Wait()
}
