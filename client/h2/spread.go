package h2

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// Spread is what an OkHttp network interceptor can do to an Pool's choice of connection:
// cap each connection's allocations, and after a call stop the connection it used from taking
// new streams (allocationLimit = 0; its streams in flight finish). The pool then opens a new
// connection, to the next route, once the others are full.
type Spread interface {
	// AllocationLimit returns the allocation limit of a connection whose peer allows peer
	// concurrent streams.
	AllocationLimit(peer int) int
	// Done is told every call that got a whole answer, and returns whether the connection it
	// used must take no new streams.
	Done(d Done) (eject bool)
}

// Done describes a call that got its answer, for a Spread.
type Done struct {
	// Route is the address ("ip:port") the stream went to.
	Route string
	// Took is the stream's time, from the request to the end of the body: what a network
	// interceptor measures around chain.proceed.
	Took time.Duration
	// At is when the call ended.
	At time.Time
}

// APNsConfig configures the APNs sender's interceptor (docs/http2.md): an allocation cap per
// connection and the ejection rule, which the model applies too (rules.APNsRule).
// APNsDefaults are its production values scaled so that an experiment takes seconds;
// APNsProduction has the values as they ran.
type APNsConfig struct {
	// AllocationLimit caps every connection's streams (production and default: 60).
	AllocationLimit int
	rules.APNsRule
}

// APNsProduction returns the interceptor's thresholds as they ran in production with OkHttp
// 3.5.
func APNsProduction() APNsConfig {
	return APNsConfig{AllocationLimit: rules.APNsAllocationLimit, APNsRule: rules.APNsProduction()}
}

// APNsDefaults returns labrun's defaults: rules.APNsScaled, the production values with every
// time divided by 100 and the total call count by 10.
func APNsDefaults() APNsConfig {
	return APNsConfig{AllocationLimit: rules.APNsAllocationLimit, APNsRule: rules.APNsScaled()}
}

// Validate reports the first threshold that makes no sense.
func (c APNsConfig) Validate() error {
	var bad []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"allocation limit", c.AllocationLimit >= 0}, {"bad calls", c.BadCalls >= 0},
		{"bad average", c.BadAvg >= 0}, {"min calls", c.MinCalls >= 0}, {"slow average", c.SlowAvg >= 0},
		{"max average share", c.MaxAvgShare >= 0}, {"max addresses", c.MaxAddrs >= 0},
		{"idle drop", c.IdleDrop >= 0}, {"sweep", c.Sweep >= 0},
	} {
		if !f.ok {
			bad = append(bad, f.name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("client: APNs %s must not be negative", strings.Join(bad, ", "))
	}
	return nil
}

// APNs is the APNs sender's interceptor as a Spread: an allocation cap per connection, and
// statistics per address that eject a connection to an address turning slow. Its sweep is a
// timer's effect computed when next needed (at a call's end), so it runs no goroutine. It is
// safe for concurrent use.
type APNs struct {
	cfg   APNsConfig
	start time.Time // the sweep's clock starts here

	mu        sync.Mutex // guards the fields below
	addrs     map[string]*apnsAddr
	seq       int // order of use, for the least recently used
	calls     int // calls in all
	maxAvg    time.Duration
	lastSweep time.Duration // since start
}

type apnsAddr struct {
	calls   int
	total   time.Duration
	lastUse time.Time
	seq     int
}

// NewAPNs returns the interceptor with cfg's thresholds; the sweep's clock starts now.
func NewAPNs(cfg APNsConfig) (*APNs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &APNs{cfg: cfg, start: time.Now(), addrs: make(map[string]*apnsAddr)}, nil
}

// AllocationLimit caps the peer's limit at the configured allocation limit (0: no cap).
func (a *APNs) AllocationLimit(peer int) int {
	if a.cfg.AllocationLimit > 0 {
		return min(peer, a.cfg.AllocationLimit)
	}
	return peer
}

// Done records the call in its address's statistics, then applies the rules; see APNsConfig.
func (a *APNs) Done(d Done) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(d.At)
	st := a.addrs[d.Route]
	if st == nil {
		if a.cfg.MaxAddrs > 0 && len(a.addrs) >= a.cfg.MaxAddrs {
			var lru string
			oldest := -1
			for r, x := range a.addrs {
				if oldest < 0 || x.seq < oldest {
					lru, oldest = r, x.seq
				}
			}
			delete(a.addrs, lru)
		}
		st = &apnsAddr{}
		a.addrs[d.Route] = st
	}
	st.calls++
	st.total += d.Took
	st.lastUse = d.At
	a.seq++
	st.seq = a.seq
	a.calls++
	avg := st.total / time.Duration(st.calls)
	c := a.cfg
	if st.calls > c.BadCalls && avg > c.BadAvg && d.Took > avg {
		return true
	}
	bad := false
	if a.maxAvg < c.BadAvg {
		bad = a.calls > c.MinCalls && avg > c.SlowAvg && d.Took > avg && float64(avg) > c.MaxAvgShare*float64(a.maxAvg)
		a.maxAvg = max(a.maxAvg, avg)
	}
	return bad
}

// sweepLocked drops what the sweeps since the last call would have: statistics change only
// at calls, so the latest sweep before now drops whatever the earlier ones would.
func (a *APNs) sweepLocked(now time.Time) {
	if a.cfg.Sweep <= 0 || a.cfg.IdleDrop <= 0 {
		return
	}
	s := now.Sub(a.start) / a.cfg.Sweep * a.cfg.Sweep
	if s <= a.lastSweep {
		return
	}
	a.lastSweep = s
	at := a.start.Add(s)
	for r, st := range a.addrs {
		if at.Sub(st.lastUse) >= a.cfg.IdleDrop {
			delete(a.addrs, r)
		}
	}
}

// APNsAddr is one address's statistics.
type APNsAddr struct {
	Route   string
	Calls   int
	Total   time.Duration
	LastUse time.Time
}

// Avg is the address's average call time.
func (s APNsAddr) Avg() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Calls)
}

// Stats returns the statistics kept now, sorted by address, and the worst average seen.
func (a *APNs) Stats() (addrs []APNsAddr, maxAvg time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for r, st := range a.addrs {
		addrs = append(addrs, APNsAddr{Route: r, Calls: st.calls, Total: st.total, LastUse: st.lastUse})
	}
	slices.SortFunc(addrs, func(x, y APNsAddr) int { return strings.Compare(x.Route, y.Route) })
	return addrs, a.maxAvg
}
