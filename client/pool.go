package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// pool is the lease side of the pool, in HttpClient 5's terms: per-route and total limits, the
// waiting calls and the books Stats reads. Methods take pool.mu alone and call nothing under it.
type pool struct {
	max          int           // 0: unlimited
	perRoute     int           // 0: no route limit
	leaseTimeout time.Duration // 0: none
	total        *semaphore.Weighted

	// mu guards the fields below and the books.
	mu      sync.Mutex
	routes  map[string]*semaphore.Weighted
	leases  map[*lease]*leaseBook
	conns   map[*conn]*connBook
	pending int
}

// lease is a call's slot, from acquire to release.
type lease struct {
	route *semaphore.Weighted
}

type leaseBook struct {
	bound bool
	conn  *conn
	// returned: its connection is back in the pool (no longer leased).
	returned bool
	dialed   []*conn
}

type connBook struct {
	user    *lease
	claimed bool // dialled for an attempt still running
}

func newPool(cfg Config) *pool {
	p := &pool{
		max:          cfg.MaxTotal,
		perRoute:     cfg.MaxPerRoute,
		leaseTimeout: cfg.LeaseTimeout,
		routes:       map[string]*semaphore.Weighted{},
		leases:       map[*lease]*leaseBook{},
		conns:        map[*conn]*connBook{},
	}
	if cfg.MaxTotal > 0 {
		p.total = semaphore.NewWeighted(int64(cfg.MaxTotal))
	}
	return p
}

var errLeaseTimeout = errors.New("lease timeout")

// acquire waits for a slot of the route and of the pool until the lease timeout or ctx.
func (p *pool) acquire(ctx context.Context, route string) (*lease, error) {
	p.mu.Lock()
	sem := p.routes[route]
	if sem == nil && p.perRoute > 0 {
		sem = semaphore.NewWeighted(int64(p.perRoute))
		p.routes[route] = sem
	}
	p.pending++
	p.mu.Unlock()

	// TryAcquire fails while others wait, so the queue stays first come, first served.
	var err error
	var until time.Time
	if p.leaseTimeout > 0 {
		until = time.Now().Add(p.leaseTimeout)
	}
	if !tryAcquire(sem) {
		err = wait(ctx, sem, until)
	}
	if err == nil && !tryAcquire(p.total) {
		if err = wait(ctx, p.total, until); err != nil && sem != nil {
			sem.Release(1)
		}
	}
	l := &lease{route: sem}
	p.mu.Lock()
	p.pending--
	if err == nil {
		p.leases[l] = &leaseBook{}
	}
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l, nil
}

func tryAcquire(sem *semaphore.Weighted) bool { return sem == nil || sem.TryAcquire(1) }

func wait(ctx context.Context, sem *semaphore.Weighted, until time.Time) error {
	lctx := ctx
	if !until.IsZero() {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, until, errLeaseTimeout)
		defer cancel()
	}
	if err := sem.Acquire(lctx, 1); err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(lctx), errLeaseTimeout) {
			return errLeaseTimeout
		}
		return context.Cause(ctx)
	}
	return nil
}

// opened records a connection dialled for l's attempt, claimed by it so it is not available.
func (p *pool) opened(cn *conn, l *lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cb := &connBook{}
	if b := p.leases[l]; b != nil {
		cb.claimed = true
		b.dialed = append(b.dialed, cn)
	}
	p.conns[cn] = cb
}

func (p *pool) open() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*conn, 0, len(p.conns))
	for cn := range p.conns {
		out = append(out, cn)
	}
	return out
}

func (p *pool) closed(cn *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, cn)
}

func (p *pool) bind(l *lease, cn *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.leases[l]
	if b == nil {
		return
	}
	b.bound, b.conn = true, cn
	if cb := p.conns[cn]; cb != nil {
		cb.user, cb.claimed = l, false
	}
}

func (p *pool) putIdle(l *lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.leases[l]
	if b == nil {
		return
	}
	b.returned = true
	p.freeUser(b.conn, l)
}

func (p *pool) freeUser(cn *conn, l *lease) {
	if cb := p.conns[cn]; cb != nil && cb.user == l {
		cb.user = nil
	}
}

// release frees l's connections and slot in one step, as HttpClient 5 does, so leased +
// available never exceeds max.
func (p *pool) release(l *lease) {
	p.mu.Lock()
	b := p.leases[l]
	if b == nil {
		p.mu.Unlock()
		panic("client: lease released twice")
	}
	for _, cn := range b.dialed {
		if cb := p.conns[cn]; cb != nil {
			cb.claimed = false
		}
	}
	p.freeUser(b.conn, l)
	delete(p.leases, l)
	p.mu.Unlock()
	if p.total != nil {
		p.total.Release(1)
	}
	if l.route != nil {
		l.route.Release(1)
	}
}

func (p *pool) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Pending: p.pending, Max: p.max}
	unbound := 0
	for _, b := range p.leases {
		if !b.returned {
			s.Leased++
		}
		if !b.bound {
			unbound++
		}
	}
	for _, cb := range p.conns {
		if cb.user == nil && !cb.claimed {
			s.Available++
		}
	}
	// An idle connection a leased attempt is about to take is not available.
	s.Available = max(0, s.Available-unbound)
	return s
}
