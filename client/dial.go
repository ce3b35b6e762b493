package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/rules"
)

// dial opens a connection with the connect timeout (DialContext, for http).
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, st, l, done := c.dialContext(ctx)
	defer done()
	_, port, ips, err := c.addresses(ctx, st, addr)
	if err != nil {
		return nil, err
	}
	return c.connect(ctx, st, l, network, ips, port)
}

func (c *Client) addresses(ctx context.Context, st *attemptState, addr string) (host, port string, ips []string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", nil, err
	}
	ips, err = c.resolve(ctx, st, host)
	return host, port, ips, err
}

// dialContext ties a dial to its attempt again: the Transport detaches dials from the request,
// but HttpClient 5 aborts a cancelled request's connect. done releases the tie.
func (c *Client) dialContext(ctx context.Context) (_ context.Context, _ *attemptState, _ *lease, done func()) {
	st, _ := ctx.Value(stateKey{}).(*attemptState)
	if st == nil {
		return ctx, nil, nil, func() {}
	}
	dctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(st.ctx, cancel)
	return dctx, st, st.lease, func() {
		stop()
		cancel()
	}
}

// connect connects to the first of ips that answers, claimed by l's attempt until a call gets it.
func (c *Client) connect(ctx context.Context, st *attemptState, l *lease, network string, ips []string, port string) (*conn, error) {
	nc, err := c.connectAddrs(ctx, st, network, ips, port)
	if err != nil {
		return nil, err
	}
	cn := &conn{Conn: nc, pool: c.pool, readTimeout: c.cfg.ReadTimeout, writeTimeout: c.cfg.WriteTimeout,
		born: time.Now(), blind: c.cfg.blind()}
	cn.alarm = clock.NewLazy(cn.expireRead)
	c.pool.opened(cn, l)
	return cn, nil
}

// connectAddrs tries ips in turn, each with the full connect timeout (HttpClient 5); with
// RoutePerAttempt (OkHttp) ips is the attempt's route only.
func (c *Client) connectAddrs(ctx context.Context, st *attemptState, network string, ips []string, port string) (net.Conn, error) {
	var err error
	d := net.Dialer{Timeout: c.cfg.ConnectTimeout}
	for _, ip := range ips {
		var nc net.Conn
		start := time.Now()
		c.dials.Add(1)
		if nc, err = dialOne(ctx, &d, network, net.JoinHostPort(ip, port)); err == nil {
			return nc, nil
		}
		if c.cfg.Rules.Connect.ReconnectOnce && ctx.Err() == nil && jdkConnectRetry(err) {
			// JDK PlainHttpConnection.canRetryConnect: a ConnectException is retried once within the
			// connect timer.
			if left := c.cfg.ConnectTimeout - time.Since(start); c.cfg.ConnectTimeout <= 0 || left > 0 {
				var retry net.Dialer
				if c.cfg.ConnectTimeout > 0 {
					retry.Timeout = left
				}
				c.dials.Add(1)
				if nc, err = dialOne(ctx, &retry, network, net.JoinHostPort(ip, port)); err == nil {
					return nc, nil
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	var ne net.Error
	if c.cfg.ConnectTimeout > 0 && errors.As(err, &ne) && ne.Timeout() && (st == nil || st.ctx.Err() == nil) {
		return nil, fmt.Errorf("%w (%v): %w", ErrConnectTimeout, c.cfg.ConnectTimeout, err)
	}
	return nil, err
}

var errConnectAlarm = errors.New("connect timeout (alarm)")

// regressDial and regressRetries are deliberate regressions for the gate's teeth test
// (docs/ci.md), set only at link time (-X): a duration added to every dial, and one retry
// more per call when set.
var regressDial, regressRetries string

// dialOne dials addr with d; an alarm cancels the dial on time (the Dialer's timer may be 1 ms
// late, package clock) with the same timeout error.
func dialOne(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	if regressDial != "" {
		extra, _ := time.ParseDuration(regressDial)
		time.Sleep(extra)
	}
	if d.Timeout <= 0 {
		return d.DialContext(ctx, network, addr)
	}
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	alarm := clock.NewAlarm(func() { cancel(errConnectAlarm) })
	alarm.Set(time.Now().Add(d.Timeout))
	defer alarm.Stop()
	nc, err := d.DialContext(dctx, network, addr)
	if err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil && errors.Is(context.Cause(dctx), errConnectAlarm) {
		var oe *net.OpError
		if errors.As(err, &oe) {
			timeout := *oe
			timeout.Err = os.ErrDeadlineExceeded
			return nc, &timeout
		}
		err = &net.OpError{Op: "dial", Net: network, Err: os.ErrDeadlineExceeded}
	}
	return nc, err
}

// resolve returns the addresses to dial for host: host itself when an IP, else the resolver's,
// the attempt's route only with RoutePerAttempt, the pinned one for OkHttp's same-route retry.
func (c *Client) resolve(ctx context.Context, st *attemptState, host string) ([]string, error) {
	ips := []string{host}
	if st != nil && st.pin != "" {
		st.setPinned()
		return []string{st.pin}, nil
	}
	if net.ParseIP(host) == nil {
		var err error
		if ips, err = c.lookup(ctx, st, host); err != nil {
			return nil, err
		}
	}
	if c.cfg.Rules.Connect.Addresses == rules.FirstAddress && len(ips) > 1 {
		ips = ips[:1]
	}
	if st == nil {
		return ips, nil
	}
	st.setRoutes(len(ips))
	if c.cfg.Rules.Connect.Addresses == rules.RoutePerAttempt {
		i := st.route % len(ips)
		ips = ips[i : i+1]
	}
	return ips, nil
}

// lookup resolves host once per call with RoutePerAttempt (OkHttp's RouteSelector), else on
// every connect (HttpClient 5).
func (c *Client) lookup(ctx context.Context, st *attemptState, host string) ([]string, error) {
	if st != nil && st.call != nil {
		if ips, ok := st.call.lookup(host); ok {
			return ips, nil
		}
	}
	r := c.cfg.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	if st != nil && c.cfg.Rules.Connect.TimerLateInLookup {
		st.lookupStarts()
	}
	ips, err := r.LookupHost(ctx, host)
	if st != nil && c.cfg.Rules.Connect.TimerLateInLookup {
		if held := st.lookupDone(); held != nil {
			return nil, held
		}
	}
	if err == nil && st != nil && st.call != nil {
		st.call.remember(host, ips)
	}
	return ips, err
}
