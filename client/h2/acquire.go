package h2

import (
	"context"
	"errors"
	"net/http"
	"slices"
)

// A call takes the first connection below its limit, else joins a connection being set up while
// its waiters fit, else opens one (OkHttp 3.x). The set-up grants joined calls their slots in
// one pass: waking every waiter to compete made a burst a herd.

const maxAcquireTries = 16

type h2Waiter struct {
	// slot receives whether the set-up reserved a slot.
	slot     chan bool
	inFlight int
}

// acquire reserves a stream slot; it returns the connection, whether the call opened it, and
// the allocations found.
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
		// Another's dial failed or the connection filled up.
		opened = false
	}
	return nil, false, 0, errors.New("client: no HTTP/2 connection could take the stream")
}

// pickLocked reserves a slot on the first usable connection below its limit, else returns a
// connection being set up whose waiters fit.
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
		default: // being set up: join while its waiters fit
		}
		if x.alloc+len(x.waiters) < p.limitLocked(x) {
			return x, 0, false
		}
	}
	return nil, 0, false
}

// abandon takes a cancelled call off c's waiters or gives its slot back.
func (p *Pool) abandon(c *h2Conn, w *h2Waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(c.waiters, w); i >= 0 {
		c.waiters = slices.Delete(c.waiters, i, i+1)
		return
	}
	if <-w.slot {
		c.cc.Release()
		c.alloc--
		c.streams--
	}
}

// grantLocked gives c's waiters their slots in order once set up; the rest look again.
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

func (c *h2Conn) take() {
	c.alloc++
	c.streams++
	c.peak = max(c.peak, c.alloc)
}

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
