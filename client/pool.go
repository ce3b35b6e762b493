package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// pool is the lease side of the connection pool, in HttpClient 5's terms: it bounds the
// connections leased to each route and in all, queues the calls waiting for a lease, and keeps
// the books Stats reads. The connections themselves sit in the Transport's idle pool; the pool
// learns of them from dial (opened), the attempts' trace hooks (bind, putIdle), the end of
// each attempt (release) and conn.Close (closed).
//
// Every method takes pool.mu alone and calls nothing of the attempt or the connection while it
// holds it; the semaphores are acquired and released without it.
type pool struct {
	max          int                 // Config.MaxTotal, for Stats (0: unlimited)
	perRoute     int                 // Config.MaxPerRoute (0: no route limit)
	leaseTimeout time.Duration       // Config.LeaseTimeout (0: none)
	total        *semaphore.Weighted // nil when MaxTotal is not set

	// mu guards routes, leases, conns, pending, and the leaseBook and connBook records in the
	// maps: they are the pool's own, reached only through its maps and never handed out.
	mu      sync.Mutex
	routes  map[string]*semaphore.Weighted
	leases  map[*lease]*leaseBook // the leases held now
	conns   map[*conn]*connBook   // the open connections
	pending int                   // calls waiting for a lease
}

// lease is a call's hold on a connection slot, from pool.acquire to pool.release. Its only
// field never changes; what the pool knows of it is in pool.leases.
type lease struct {
	route *semaphore.Weighted // the route's semaphore, nil when routes have no limit
}

// leaseBook is what the pool knows of a lease held now; guarded by pool.mu.
type leaseBook struct {
	bound bool  // its attempt got a connection
	conn  *conn // the connection its attempt got last (nil: none, or not labrun's)
	// returned: its connection went back to the pool while the attempt has not released the
	// lease yet; in HttpClient 5's terms it is no longer leased.
	returned bool
	dialed   []*conn // connections dialled for its attempt (another call may have taken them)
}

// connBook is what the pool knows of an open connection, for Stats; guarded by pool.mu.
type connBook struct {
	user    *lease // the lease whose attempt holds the connection, nil while nobody does
	claimed bool   // dialled for an attempt that has not ended or got it yet
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

// acquire waits for a connection slot of the route (and of the whole pool), bounded by the
// lease timeout and ctx. It returns errLeaseTimeout or the cause of ctx, holding nothing then.
func (p *pool) acquire(ctx context.Context, route string) (*lease, error) {
	p.mu.Lock()
	sem := p.routes[route]
	if sem == nil && p.perRoute > 0 {
		sem = semaphore.NewWeighted(int64(p.perRoute))
		p.routes[route] = sem
	}
	p.pending++
	p.mu.Unlock()

	// Fast path: a free slot needs no timer. TryAcquire fails while others wait, so the
	// queue stays first come, first served.
	var err error
	var until time.Time // the lease timeout, one budget for both waits
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

// wait blocks for a slot of sem until the lease timeout (zero: none) or ctx is done. It
// returns errLeaseTimeout, or the cause of ctx.
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

// opened records a connection just dialled for l's attempt (l nil: for no attempt). Until a
// call gets it, the connection is claimed by that attempt, so it does not show as available;
// the lease's release drops the claim. A dial that finishes after the release is nobody's.
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

// open returns the open connections, for the evictor.
func (p *pool) open() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*conn, 0, len(p.conns))
	for cn := range p.conns {
		out = append(out, cn)
	}
	return out
}

// closed forgets a closed connection.
func (p *pool) closed(cn *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, cn)
}

// bind records that l's attempt got cn (nil when the Transport's connection is not labrun's):
// the lease is no longer waiting for a connection, and cn is in use.
func (p *pool) bind(l *lease, cn *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.leases[l]
	if b == nil {
		return // released already
	}
	b.bound, b.conn = true, cn
	if cb := p.conns[cn]; cb != nil {
		cb.user, cb.claimed = l, false
	}
}

// putIdle records that the connection of l's attempt is back in the Transport's idle pool.
// Another call may take it before the attempt releases its lease: the lease counts as returned
// now.
func (p *pool) putIdle(l *lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.leases[l]
	if b == nil {
		return // released already
	}
	b.returned = true
	p.freeUser(b.conn, l)
}

// freeUser clears the user of cn if it is still l: the Transport may have handed cn to
// another call already.
func (p *pool) freeUser(cn *conn, l *lease) {
	if cb := p.conns[cn]; cb != nil && cb.user == l {
		cb.user = nil
	}
}

// release closes the books of l: it frees its connections for the statistics and gives the
// slot back, the two in one step (as HttpClient 5 releases a connection), so that leased +
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
			cb.claimed = false // pooled for the next call, unless someone uses it already
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

// stats is a consistent snapshot of the books.
func (p *pool) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Pending: p.pending, Max: p.max}
	unbound := 0 // leases whose attempt has not got its connection yet
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
	// In HttpClient 5 a lease is a connection. Here a lease comes first and the Transport
	// then hands over an idle connection if it has one, so an idle connection that a leased
	// attempt is about to take is not available any more.
	s.Available = max(0, s.Available-unbound)
	return s
}
