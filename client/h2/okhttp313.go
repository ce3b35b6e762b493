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

// OkHttp 3.13's connection finding, for a pool whose Config.Rule has DialPerCall
// (rules.H2OkHttp313; docs/http2.md), from
// OkHttp 3.13.1's source:
//
//   - A call that finds no pooled connection with room dials one of its own, which enters the
//     pool only once connected (StreamAllocation.findConnection; Internal.instance.put after
//     RealConnection.connect): calls that look together each dial.
//   - A connection's allocation limit is the peer's SETTINGS_MAX_CONCURRENT_STREAMS once its
//     SETTINGS have been read (RealConnection.onSettings), and unlimited before
//     (RealConnection.connect sets it to Http2Connection.maxConcurrentStreams, which is
//     Integer.MAX_VALUE until the peer's SETTINGS arrive). This pool does not wait for them.
//   - Once connected, the call moves to the first other pooled connection with room and
//     closes the one it dialled (ConnectionPool.deduplicate, StreamAllocation.releaseAndAcquire).
//   - A stream the peer refuses (REFUSED_STREAM) is sent again once, on the same connection
//     unless it takes no new streams (then the call looks for a connection again); a second
//     refusal fails the call and stops the connection taking new streams
//     (StreamAllocation.streamFailed). A connection that takes no new streams closes once its
//     last stream ends.
//
// net/http's ClientConn holds a stream over the peer's limit instead of sending it, and
// sends a stream the peer refused again by itself: the pool sends a call's stream once the
// peer's SETTINGS are in, and takes a stream net/http will not take (Reserve failing on a
// live connection) as the peer's refusal, which is what OkHttp gets for it on the wire. The
// allocations, which decide the herd, follow OkHttp's rules; only the refusal is the pool's.

// errRefusedStream is the refusal of a stream over the peer's limit.
var errRefusedStream = errors.New("stream error: REFUSED_STREAM (the peer's limit)")

// isRefused reports whether err is the peer's or the pool's refusal of a stream.
func isRefused(err error) bool {
	return errors.Is(err, errRefusedStream) || err != nil && strings.Contains(err.Error(), "REFUSED_STREAM")
}

// acquire313 finds a connection for a call by OkHttp 3.13's rule: a pooled one with room,
// or one the call dials itself, and then deduplicates. It returns the connection, whether
// the call stays on the connection it dialled, and the allocations it found.
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
	if err == nil && p.closed { // Close has taken its list of connections: this one is not in it
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
	// Deduplication: the call moves to x, and the connection it dialled closes unused.
	c.alloc, c.streams, c.peak, c.ejected = 0, 0, 0, true
	x.take()
	p.mu.Unlock()
	cc.Close()
	return x, false, n, nil
}

// pick313Locked is the first pooled connection other than skip that takes a new stream and
// is below its allocation limit, with its allocations; nil if none. The pool's lock must be
// held.
func (p *Pool) pick313Locked(skip *h2Conn) (*h2Conn, int) {
	for _, x := range p.conns {
		if x != skip && !x.ejected && !x.unusable() && x.alloc < p.limit313Locked(x) {
			return x, x.alloc
		}
	}
	return nil, 0
}

// limit313Locked is c's allocation limit by OkHttp 3.13's rule: the peer's stream limit once
// its SETTINGS have been processed, unlimited before; capped as limitLocked caps. The pool's
// lock must be held.
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

// connect313 opens a connection to route within ConnectTimeout and returns once the
// connection preface is written, without waiting for the peer's SETTINGS, as
// RealConnection.connect returns. The connect is the call's: its cancellation ends it.
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

// send313 sends req on c, and again once if the stream is refused: on c, or, if c takes no new
// streams by then, on a connection found anew (acquire313). A second refusal fails the call
// and stops its connection taking new streams. It returns the connection the last stream went
// on, nil if the call holds no allocation (looking anew failed), and how many refusals the
// call met.
func (p *Pool) send313(ctx context.Context, c *h2Conn, req *http.Request) (*http.Response, *h2Conn, int, error) {
	refused := 0
	for {
		// net/http's provisional limit before the peer's SETTINGS is not the peer's, and it
		// sends a refused stream again by itself: the stream goes once they are in.
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
			c.ejected = true // noNewStreams
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
				return nil, nil, refused, aerr // no allocation held
			}
			c = next
		}
	}
}

// maxStreams is the peer's SETTINGS_MAX_CONCURRENT_STREAMS once net/http has processed its
// first SETTINGS (ok), or unlimited when that SETTINGS set none.
func (s *h2Sniffer) maxStreams() (int, bool) {
	if s == nil || !s.settledNow() {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit, true
}

// settledNow reports whether net/http has processed the peer's first SETTINGS.
func (s *h2Sniffer) settledNow() bool {
	select {
	case <-s.settled:
		return true
	default:
		return false
	}
}

// observeSetting records SETTINGS_MAX_CONCURRENT_STREAMS from the first frame's payload, one
// 6-byte setting (a 16-bit identifier, a 32-bit value) at a time. The lock must be held.
func (s *h2Sniffer) observeSetting(b byte) {
	s.setting[s.settingLen] = b
	s.settingLen++
	if s.settingLen < len(s.setting) {
		return
	}
	s.settingLen = 0
	if binary.BigEndian.Uint16(s.setting[:2]) == 0x3 { // SETTINGS_MAX_CONCURRENT_STREAMS
		s.limit = int(min(binary.BigEndian.Uint32(s.setting[2:]), unknownLimit))
	}
}
