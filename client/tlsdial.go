package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/rules"
)

// ErrHandshakeTimeout is a TLS handshake read that waited Config.TLSHandshakeTimeout: a read
// timeout in the connect phase.
var ErrHandshakeTimeout = errors.New("TLS handshake timeout")

// dialTLS is the Transport's DialTLSContext: it connects as dial does and runs the handshake,
// each read bounded by Config.TLSHandshakeTimeout. Without RoutePerAttempt a failed handshake
// moves on to the next address, as HttpClient 5 does
// (DefaultHttpClientConnectionOperator.connect, 5.2.1).
func (c *Client) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, st, l, done := c.dialContext(ctx)
	defer done()
	host, port, ips, err := c.addresses(ctx, st, addr)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		start := time.Now()
		var cn *conn
		if cn, err = c.connect(ctx, st, l, network, []string{ip}, port); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		var tc *tls.Conn
		if tc, err = c.handshake(ctx, cn, host, start); err == nil {
			return tc, nil
		}
		cn.Close()
		if ctx.Err() != nil || !c.nextAfterHandshake(err) {
			break
		}
	}
	return nil, err
}

// nextAfterHandshake applies rules.Connect.HandshakeNext.
func (c *Client) nextAfterHandshake(err error) bool {
	switch c.cfg.Rules.Connect.HandshakeNext {
	case rules.HandshakeNextOnTimeout:
		return errors.Is(err, ErrHandshakeTimeout)
	case rules.HandshakeNextNone:
		return false
	}
	return true
}

// errConnectTimer ends a handshake the connect timer covers (rules.Connect.TimerCoversHandshake).
var errConnectTimer = errors.New("connect timer")

// handshake runs TLS for host over cn, whose connect started at start.
func (c *Client) handshake(ctx context.Context, cn *conn, host string, start time.Time) (*tls.Conn, error) {
	cfg := &tls.Config{}
	if c.cfg.TLS != nil {
		cfg = c.cfg.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	hctx := ctx
	if c.cfg.Rules.Connect.TimerCoversHandshake && c.cfg.ConnectTimeout > 0 {
		var cancel context.CancelCauseFunc
		hctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		alarm := clock.NewAlarm(func() { cancel(errConnectTimer) })
		alarm.Set(start.Add(c.cfg.ConnectTimeout))
		defer alarm.Stop()
	}
	cn.setHandshakeTimeout(c.cfg.TLSHandshakeTimeout)
	tc := tls.Client(cn, cfg)
	err := tc.HandshakeContext(hctx)
	cn.setHandshakeTimeout(0)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(hctx), errConnectTimer) {
		return nil, fmt.Errorf("%w (%v, the TLS handshake included): %w", ErrConnectTimeout, c.cfg.ConnectTimeout, err)
	}
	if err != nil && c.cfg.TLSHandshakeTimeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
		if c.cfg.Rules.Connect.HandshakeTimeoutAsConnect {
			return nil, fmt.Errorf("%w (%w, %v): %w", ErrConnectTimeout, ErrHandshakeTimeout, c.cfg.TLSHandshakeTimeout, err)
		}
		return nil, fmt.Errorf("%w (%v): %w", ErrHandshakeTimeout, c.cfg.TLSHandshakeTimeout, err)
	}
	return tc, err
}
