package h2

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OkHttp 3.13.1's connection finding (Config.Rule.DialPerCall; docs/http2.md): a call finding
// no room dials its own connection (StreamAllocation.findConnection), unlimited until the peer's
// SETTINGS (RealConnection.onSettings), then moves to a pooled one with room and closes its own
// (ConnectionPool.deduplicate); a refused stream goes again once (streamFailed). net/http holds
// a stream over the peer's limit, so the pool takes its Reserve refusal as REFUSED_STREAM.

var errRefusedStream = errors.New("stream error: REFUSED_STREAM (the peer's limit)")

func isRefused(err error) bool {
	return errors.Is(err, errRefusedStream) || err != nil && strings.Contains(err.Error(), "REFUSED_STREAM")
}

// acquire313 finds a connection by OkHttp 3.13's rule and deduplicates; it returns the
// connection, whether the call stays on the one it dialled, and the allocations found.
func (p *Pool) acquire313(ctx context.Context) (c *h2Conn, opened bool, inFlight int, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, 0, errors.New("client: HTTP/2 pool closed")
	}
	if x, n := p.pick313Locked(nil); x != nil {
		x.take()
		p.mu.Unlock()
		return x, false, n, nil
	}
	p.dials++
	c = &h2Conn{id: p.dials, route: p.cfg.Routes[p.next%len(p.cfg.Routes)], ready: make(chan struct{})}
	p.next++
	p.wg.Add(1)
	p.mu.Unlock()

	cc, sniffer, err := p.connect313(ctx, c.route)
	defer p.wg.Done()
	p.mu.Lock()
	c.cc, c.err, c.sniffer = cc, err, sniffer
	close(c.ready)
	if err == nil && p.closed {
		err = errors.New("client: HTTP/2 pool closed")
		cc.Close()
	}
	if err != nil {
		p.mu.Unlock()
		return c, true, 0, err
	}
	cc.SetStateHook(func(cc *http.ClientConn) {
		if cc.Err() != nil {
			c.dead.Store(true)
		}
	})
	p.conns = append(p.conns, c)
	c.take()
	x, n := p.pick313Locked(c)
	if x == nil {
		p.mu.Unlock()
		return c, true, 0, nil
	}
	// Deduplication: the call moves to x; its own connection closes unused.
	c.alloc, c.streams, c.peak, c.ejected = 0, 0, 0, true
	x.take()
	p.mu.Unlock()
	cc.Close()
	return x, false, n, nil
}

// pick313Locked is the first pooled connection but skip below its limit; nil if none.
func (p *Pool) pick313Locked(skip *h2Conn) (*h2Conn, int) {
	for _, x := range p.conns {
		if x != skip && !x.ejected && !x.unusable() && x.alloc < p.limit313Locked(x) {
			return x, x.alloc
		}
	}
	return nil, 0
}

// limit313Locked is c's limit: the peer's once its SETTINGS are in, unlimited before, capped.
func (p *Pool) limit313Locked(c *h2Conn) int {
	peer := unknownLimit
	if l, ok := c.sniffer.maxStreams(); ok {
		peer = l
	}
	if a := p.cfg.AllocationLimit; a > 0 {
		peer = min(peer, a)
	}
	if p.cfg.Spread != nil {
		peer = min(peer, p.cfg.Spread.AllocationLimit(peer))
	}
	return peer
}

// connect313 dials route within ConnectTimeout and returns once the preface is written
// (RealConnection.connect).
func (p *Pool) connect313(ctx context.Context, route string) (*http.ClientConn, *h2Sniffer, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.closeCtx, cancel)
	defer stop()
	if p.cfg.ConnectTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, p.cfg.ConnectTimeout)
		defer cancel()
	}
	dialed := new(h2Dialed)
	cc, err := p.tr.NewClientConn(context.WithValue(ctx, h2DialedKey{}, dialed), "http", route)
	if err != nil {
		return nil, nil, err
	}
	return cc, dialed.sniffer, nil
}

// send313 sends req on c, and once more if refused (on a connection found anew when c is
// ejected); it returns the last connection (nil: none held) and the refusals met.
func (p *Pool) send313(ctx context.Context, c *h2Conn, req *http.Request) (*http.Response, *h2Conn, int, error) {
	refused := 0
	for {
		// net/http's provisional limit is not the peer's.
		select {
		case <-c.sniffer.settled:
		case <-ctx.Done():
			return nil, c, refused, ctx.Err()
		}
		var resp *http.Response
		err := c.cc.Reserve()
		if err != nil && c.cc.Err() == nil {
			err = errRefusedStream
		}
		if err == nil {
			resp, err = c.cc.RoundTrip(req)
		}
		if !isRefused(err) {
			return resp, c, refused, err
		}
		refused++
		p.mu.Lock()
		if refused > 1 {
			c.ejected = true
			p.mu.Unlock()
			return nil, c, refused, fmt.Errorf("client: %w (refused twice)", err)
		}
		moved := c.ejected
		p.mu.Unlock()
		if req.Body != nil {
			if req.GetBody == nil {
				return nil, c, refused, err
			}
			if req.Body, err = req.GetBody(); err != nil {
				return nil, c, refused, err
			}
		}
		if moved {
			p.release(c, false, 0, time.Now())
			next, _, _, aerr := p.acquire313(ctx)
			if aerr != nil {
				return nil, nil, refused, aerr
			}
			c = next
		}
	}
}

// maxStreams is the peer's limit once its first SETTINGS was processed (ok).
func (s *h2Sniffer) maxStreams() (int, bool) {
	if s == nil || !s.settledNow() {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit, true
}

func (s *h2Sniffer) settledNow() bool {
	select {
	case <-s.settled:
		return true
	default:
		return false
	}
}

// observeSetting reads the first frame's settings, 6 bytes each; the lock must be held.
func (s *h2Sniffer) observeSetting(b byte) {
	s.setting[s.settingLen] = b
	s.settingLen++
	if s.settingLen < len(s.setting) {
		return
	}
	s.settingLen = 0
	if binary.BigEndian.Uint16(s.setting[:2]) == 0x3 {
		s.limit = int(min(binary.BigEndian.Uint32(s.setting[2:]), unknownLimit))
	}
}
