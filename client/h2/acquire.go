package h2

import (
	"context"
	"errors"
	"net/http"
	"slices"
)

// How a call gets a stream slot in an Pool, by OkHttp 3.x's rule: the first connection
// whose allocations are below its limit; when none, it joins a connection being set up while
// the calls waiting for it fit, or opens one to the next route.
//
// The calls that joined a connection being set up are given their slots by the set-up itself,
// in the order they joined, in one pass under the pool's lock, when the connection is ready;
// each is then woken with its slot, or told to look again if it did not fit. (Letting every
// waiter wake and compete for the pool's lock made a burst of 180 calls a herd on two cores:
// 3 to 5 ms, in the median, between the connection being ready and a call having its slot.)

// maxAcquireTries bounds how often a call looks for a connection: each try either gets a
// slot or opens or joins a connection, which fails only if its dial fails or it filled up
// under the call's feet.
const maxAcquireTries = 16

// h2Waiter is a call waiting for a connection's set-up.
type h2Waiter struct {
	// slot receives whether the set-up reserved a slot for the call; inFlight, set before,
	// is the allocations the call found.
	slot     chan bool
	inFlight int
}

// acquire finds a stream slot for a call, by OkHttp's rule, and reserves it on the connection.
// It returns the connection, whether this call opened it, and the allocations it found.
func (p *Pool) acquire(ctx context.Context) (c *h2Conn, opened bool, inFlight int, err error) {
	if p.cfg.Rule.DialPerCall {
		return p.acquire313(ctx)
	}
	for range maxAcquireTries {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, 0, errors.New("client: HTTP/2 pool closed")
		}
		join, n, ok := p.pickLocked()
		if ok {
			p.mu.Unlock()
			return join, false, n, nil
		}
		opened = join == nil
		if opened {
			join = p.openLocked()
		}
		w := &h2Waiter{slot: make(chan bool, 1)}
		join.waiters = append(join.waiters, w)
		p.mu.Unlock()

		var got bool
		select {
		case got = <-w.slot:
		case <-ctx.Done():
			p.abandon(join, w)
			return join, opened, 0, ctx.Err()
		}
		switch {
		case got:
			return join, opened, w.inFlight, nil
		case join.err != nil && opened:
			return join, true, 0, join.err
		}
		// Someone else's dial failed (a new route comes next), or the connection filled up:
		// look again.
		opened = false
	}
	return nil, false, 0, errors.New("client: no HTTP/2 connection could take the stream")
}

// pickLocked applies OkHttp's rule to the pool's connections: a slot reserved on the first
// usable connection below its limit (ok, with the allocations found), else the first
// connection being set up whose waiting calls still fit its limit, else none. The pool's lock
// must be held.
func (p *Pool) pickLocked() (c *h2Conn, inFlight int, ok bool) {
	for _, x := range p.conns {
		if x.ejected || x.unusable() {
			continue
		}
		select {
		case <-x.ready:
			if x.alloc+len(x.waiters) < p.limitLocked(x) && x.cc.Reserve() == nil {
				n := x.alloc
				x.take()
				return x, n, true
			}
			continue
		default: // being set up: join it while the streams waiting fit its limit
		}
		if x.alloc+len(x.waiters) < p.limitLocked(x) {
			return x, 0, false
		}
	}
	return nil, 0, false
}

// abandon takes a cancelled call off c's waiters or, if the set-up already gave it a slot,
// gives the slot back.
func (p *Pool) abandon(c *h2Conn, w *h2Waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(c.waiters, w); i >= 0 {
		c.waiters = slices.Delete(c.waiters, i, i+1)
		return
	}
	if <-w.slot { // given before the call saw its cancellation: unused
		c.cc.Release()
		c.alloc--
		c.streams--
	}
}

// grantLocked gives c's waiting calls their slots, in the order they joined, once c's set-up
// has ended; those that do not fit (or all, if it failed) are told to look again. The pool's
// lock must be held.
func (p *Pool) grantLocked(c *h2Conn) {
	ws := c.waiters
	c.waiters = nil
	for _, w := range ws {
		ok := !c.ejected && !c.unusable() && c.alloc < p.limitLocked(c) && c.cc.Reserve() == nil
		if ok {
			w.inFlight = c.alloc
			c.take()
		}
		w.slot <- ok
	}
}

// take allocates a stream on c. The pool's lock must be held.
func (c *h2Conn) take() {
	c.alloc++
	c.streams++
	c.peak = max(c.peak, c.alloc)
}

// openLocked starts a new connection to the next route. The pool's lock must be held.
func (p *Pool) openLocked() *h2Conn {
	c := &h2Conn{id: len(p.conns) + 1, route: p.cfg.Routes[p.next%len(p.cfg.Routes)], ready: make(chan struct{})}
	p.next++
	p.conns = append(p.conns, c)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		cc, err := p.setUp(c.route)
		if err == nil {
			cc.SetStateHook(func(cc *http.ClientConn) {
				if cc.Err() != nil {
					c.dead.Store(true)
				}
			})
		}
		p.mu.Lock()
		c.cc, c.err = cc, err
		if err == nil {
			p.learned = cc.Available() + cc.InFlight()
		}
		close(c.ready)
		p.grantLocked(c)
		p.mu.Unlock()
	}()
	return c
}
