package model

import (
	"math"
	"slices"
	"time"
)

// The APNs interceptor's ejection in the simulation, the prediction it yields, and the
// closed form of Go's strict-mode burst.

// eject applies the interceptor's rule after call ended on c at t.
func (m *h2Sim) eject(e H2Ejection, call int, c *h2SimConn, t time.Duration) {
	if e.Sweep > 0 && e.IdleDrop > 0 {
		// The sweeps since the last call: entries change only at calls, so the latest sweep
		// drops whatever any of them would have.
		if s := t / e.Sweep * e.Sweep; s > m.lastSweep {
			for a, st := range m.addrs {
				if s-st.lastUse >= e.IdleDrop {
					delete(m.addrs, a)
				}
			}
			m.lastSweep = s
		}
	}
	st := m.addrs[c.Node]
	if st == nil {
		if e.MaxAddrs > 0 && len(m.addrs) >= e.MaxAddrs {
			lru, oldest := -1, math.MaxInt
			for a, x := range m.addrs {
				if x.lastSeen < oldest {
					lru, oldest = a, x.lastSeen
				}
			}
			delete(m.addrs, lru)
		}
		st = &h2AddrStats{}
		m.addrs[c.Node] = st
	}
	took := t - m.started[call]
	st.count++
	st.total += took
	st.lastUse = t
	m.useSeq++
	st.lastSeen = m.useSeq
	m.allCalls++
	avg := st.total / time.Duration(st.count)
	bad := false
	if st.count > e.BadCalls && avg > e.BadAvg && took > avg {
		bad = true
	} else if m.maxAvg < e.BadAvg {
		if m.allCalls > e.MinCalls && avg > e.SlowAvg && took > avg && float64(avg) > e.MaxAvgShare*float64(m.maxAvg) {
			bad = true
		}
		m.maxAvg = max(m.maxAvg, avg)
	}
	if bad && !c.ejected {
		c.ejected, c.EjectedAfter, c.EjectedAt = true, call, t
	}
}

func (m *h2Sim) prediction() H2Prediction {
	p := H2Prediction{
		Calls:          m.calls,
		StreamsPerNode: make([]int, len(m.s.Nodes)),
		LastCall:       make([]int, len(m.s.Nodes)),
	}
	for i := range p.LastCall {
		p.LastCall[i] = -1
	}
	for _, c := range m.conns {
		p.Conns = append(p.Conns, c.H2Conn)
	}
	durations := make([]time.Duration, 0, len(m.calls))
	waves := map[H2Wave]int{}
	for i, c := range m.calls {
		if m.started[i] >= 0 {
			p.StreamsPerNode[c.Node]++
			p.LastCall[c.Node] = i
		}
		durations = append(durations, c.Took())
		waves[H2Wave{At: c.End, Outcome: c.Outcome}]++
	}
	for w, n := range waves {
		w.Calls = n
		p.Waves = append(p.Waves, w)
	}
	slices.SortFunc(p.Waves, func(a, b H2Wave) int {
		if a.At != b.At {
			return cmpDuration(a.At, b.At)
		}
		return a.Outcome.Rank() - b.Outcome.Rank()
	})
	p.P50, p.P99 = Percentile(durations, 50), Percentile(durations, 99)
	return p
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Percentile returns the p-th percentile (0 < p <= 100) of ds by nearest rank: the smallest
// value with at least p% of the values at or below it; 0 for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// H2StrictBurst is what net/http's strict mode guarantees for a burst: see GoStrictBurst.
type H2StrictBurst struct {
	// Certain says the outcome below holds whatever the scheduling. When it is false, whether
	// the burst stalls depends on how its first wave formed: Stalls and MaxOK are then those
	// of a burst that does not stall, the documented behaviour.
	Certain bool
	// Stalls says the calls beyond the first wave wait until their deadline.
	Stalls bool
	// MaxOK is the most calls that succeed, each at OKAt: every call without a stall, at most
	// the first wave (the limit) with one.
	MaxOK int
	OKAt  time.Duration
	// StalledEnd is when a stalled call ends: its deadline (vocab.Deadline), Forever without
	// one.
	StalledEnd time.Duration
}

// GoStrictBurst predicts a burst of calls made at once, all within the first wave's latency,
// through net/http with HTTP2Config.StrictMaxConcurrentRequests on one connection whose peer
// allows limit streams, each answered after latency and bounded by deadline (Client.Timeout;
// 0: none). This is net/http's behaviour, not the documented one (SimulateH2 with H2GoStrict
// predicts the documented waves): every call of the burst reserves a stream slot
// (ClientConn.ReserveNewRequest) before any of them waits, and the one call that waits for a
// slot does so holding the connection's header-writing lock while the reservations of the
// calls queued behind that lock count as streams in use (golang/go#70809; docs/http2.md
// follows it through the source). With a first wave of s1 <= limit streams, the waiting call
// sees calls - s1 - 1 reservations once that wave is done; from calls = 2 x limit + 1 on that
// is at least the limit whatever s1 was, so the burst stalls for certain and at most limit
// calls succeed. Up to the limit there is nothing to wait for. In between, whether it stalls
// depends on the scheduling (Certain is false).
func GoStrictBurst(calls, limit int, latency, deadline time.Duration) H2StrictBurst {
	if calls < 0 || limit < 1 || latency < 0 || deadline < 0 {
		panic("model: GoStrictBurst needs calls >= 0, limit >= 1 and non-negative times")
	}
	b := H2StrictBurst{Certain: calls <= limit || calls >= 2*limit+1, MaxOK: calls, OKAt: latency, StalledEnd: Forever}
	if calls >= 2*limit+1 {
		b.Stalls, b.MaxOK = true, limit
	}
	if deadline > 0 {
		b.StalledEnd = deadline
		if deadline <= latency {
			b.MaxOK = 0 // every call is cut before its answer
		}
	}
	return b
}
