package h2

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// Dispatcher limits calls through a Pool as OkHttp's Dispatcher does enqueued calls: MaxRequests
// at once, MaxRequestsPerHost per host (OkHttp 3.13: 64 and 5), first come first served.
type Dispatcher struct {
	pool    *Pool
	all     chan struct{}
	perHost int

	mu    sync.Mutex
	hosts map[string]chan struct{}
}

const (
	DefaultMaxRequests        = 64
	DefaultMaxRequestsPerHost = 5
)

// NewDispatcher returns a Dispatcher for pool; a 0 limit means OkHttp's default.
func NewDispatcher(pool *Pool, maxRequests, maxRequestsPerHost int) (*Dispatcher, error) {
	if maxRequests < 0 || maxRequestsPerHost < 0 {
		return nil, fmt.Errorf("client: dispatcher limits must not be negative, got %d and %d", maxRequests, maxRequestsPerHost)
	}
	if maxRequests == 0 {
		maxRequests = DefaultMaxRequests
	}
	if maxRequestsPerHost == 0 {
		maxRequestsPerHost = DefaultMaxRequestsPerHost
	}
	return &Dispatcher{pool: pool, all: make(chan struct{}, maxRequests), perHost: maxRequestsPerHost, hosts: make(map[string]chan struct{})}, nil
}

// Do waits for the call's turn (bounded by ctx) and makes it; Elapsed counts from the turn.
func (d *Dispatcher) Do(ctx context.Context, req *http.Request) (*Result, error) {
	d.mu.Lock()
	host, ok := d.hosts[req.URL.Host]
	if !ok {
		host = make(chan struct{}, d.perHost)
		d.hosts[req.URL.Host] = host
	}
	d.mu.Unlock()
	select {
	case host <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-host }()
	select {
	case d.all <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-d.all }()
	return d.pool.Do(ctx, req)
}
