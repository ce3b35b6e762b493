package h2

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// Spread is what an OkHttp network interceptor can do to a Pool: cap each connection's
// allocations, and eject a connection from new streams after a call.
type Spread interface {
	// AllocationLimit returns the limit of a connection whose peer allows peer streams.
	AllocationLimit(peer int) int
	// Done is told each answered call and returns whether to eject its connection.
	Done(d Done) (eject bool)
}

// Done describes an answered call, for a Spread.
type Done struct {
	Route string
	// Took runs from the request to the body's end (what an interceptor measures).
	Took time.Duration
	At   time.Time
}

// APNsConfig configures the APNs sender's interceptor (docs/http2.md; rules.APNsRule).
type APNsConfig struct {
	AllocationLimit int
	rules.APNsRule
}

// APNsProduction returns the thresholds as run in production with OkHttp 3.5.
func APNsProduction() APNsConfig {
	return APNsConfig{AllocationLimit: rules.APNsAllocationLimit, APNsRule: rules.APNsProduction()}
}

// APNsDefaults returns rules.APNsScaled: production's times / 100, calls / 10.
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

// APNs is the APNs interceptor as a Spread: a cap, and per-address statistics that eject a
// connection to a slowing address; its sweep is computed at calls. Safe for concurrent use.
type APNs struct {
	cfg   APNsConfig
	start time.Time

	mu        sync.Mutex // guards the fields below
	addrs     map[string]*apnsAddr
	seq       int // for least recently used
	calls     int
	maxAvg    time.Duration
	lastSweep time.Duration
}

type apnsAddr struct {
	calls   int
	total   time.Duration
	lastUse time.Time
	seq     int
}

// NewAPNs returns the interceptor; the sweep's clock starts now.
func NewAPNs(cfg APNsConfig) (*APNs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &APNs{cfg: cfg, start: time.Now(), addrs: make(map[string]*apnsAddr)}, nil
}

// AllocationLimit caps peer at the configured limit (0: no cap).
func (a *APNs) AllocationLimit(peer int) int {
	if a.cfg.AllocationLimit > 0 {
		return min(peer, a.cfg.AllocationLimit)
	}
	return peer
}

// Done records the call and applies the rules (APNsConfig).
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

// sweepLocked applies the latest sweep before now, which covers the earlier ones.
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

// Stats returns the statistics by address and the worst average seen.
func (a *APNs) Stats() (addrs []APNsAddr, maxAvg time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for r, st := range a.addrs {
		addrs = append(addrs, APNsAddr{Route: r, Calls: st.calls, Total: st.total, LastUse: st.lastUse})
	}
	slices.SortFunc(addrs, func(x, y APNsAddr) int { return strings.Compare(x.Route, y.Route) })
	return addrs, a.maxAvg
}
