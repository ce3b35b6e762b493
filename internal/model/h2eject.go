package model

import (
	"math"
	"slices"
	"time"
)

// H2Overhead is a call's time beyond its node's latency: Min to Max, Min to MeanMax averaged.
type H2Overhead struct{ Min, MeanMax, Max time.Duration }

// H2Ends is a scenario at the corners of its jitter.
type H2Ends struct {
	// Corners: a run per set of nodes ejecting when the jitter allows; Fewest none, Most all.
	Corners      []H2Prediction
	Fewest, Most H2Prediction
	// Jitter: Most's first.
	Jitter []H2JitterEjection
}

// H2JitterEjection is an ejection the jitter decided: AvgLo..AvgHi straddled Threshold.
type H2JitterEjection struct {
	Call, Conn, Node int
	Threshold        time.Duration
	AvgLo, AvgHi     time.Duration
}

// h2CornerNodes: beyond this many nodes, only the two outer corners.
const h2CornerNodes = 6

// SimulateH2Ends simulates s at the corners of H2Client.Overhead, by set of nodes, since
// ejecting more is not always ejecting sooner. It panics as SimulateH2 does.
func SimulateH2Ends(s H2Scenario) H2Ends {
	if err := s.validate(); err != nil {
		panic(err)
	}
	if s.Starts != nil {
		s.Calls = len(s.Starts)
	}
	n := len(s.Nodes)
	corners := 2
	if n <= h2CornerNodes {
		corners = 1 << n
	}
	var out H2Ends
	var others []H2JitterEjection
	for k := range corners {
		m := newH2Sim(s)
		m.eager = make([]bool, n)
		for i := range n {
			m.eager[i] = k == corners-1 || k>>i&1 == 1
		}
		m.run()
		out.Corners = append(out.Corners, m.prediction())
		if k == corners-1 {
			out.Jitter = m.jitter
		} else {
			others = append(others, m.jitter...)
		}
	}
	for _, j := range others {
		if !slices.ContainsFunc(out.Jitter, func(x H2JitterEjection) bool { return x.Node == j.Node }) {
			out.Jitter = append(out.Jitter, j)
		}
	}
	out.Fewest, out.Most = out.Corners[0], out.Corners[corners-1]
	return out
}

type h2Maybe int8

const (
	h2No h2Maybe = iota
	h2Either
	h2Yes
)

func h2Exceeds(aLo, aHi, bLo, bHi time.Duration) h2Maybe {
	switch {
	case aLo > bHi:
		return h2Yes
	case aHi <= bLo:
		return h2No
	}
	return h2Either
}

func h2Above(lo, hi, x time.Duration) h2Maybe { return h2Exceeds(lo, hi, x, x) }

func h2Certain(b bool) h2Maybe {
	if b {
		return h2Yes
	}
	return h2No
}

func (m *h2Sim) take(d h2Maybe, node int) bool {
	if m.eager != nil && m.eager[node] {
		return d != h2No
	}
	return d == h2Yes
}

// eject applies the interceptor's rule after call ended on c at t.
func (m *h2Sim) eject(e H2Ejection, call int, c *h2SimConn, t time.Duration) {
	if e.Sweep > 0 && e.IdleDrop > 0 {
		// Entries change only at calls: the latest sweep does what any would have.
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
	o := m.s.Client.Overhead
	took := t - m.started[call]
	lo, hi := took+o.Min, took+o.Max
	st.count++
	st.totalLo += lo
	st.totalHi += took + o.MeanMax
	st.lastUse = t
	m.useSeq++
	st.lastSeen = m.useSeq
	m.allCalls++
	n := time.Duration(st.count)
	avgLo, avgHi := st.totalLo/n, st.totalHi/n
	all := func(ds ...h2Maybe) h2Maybe { return slices.Min(ds) }
	slower := h2Exceeds(lo, hi, avgLo, avgHi)
	bad := all(h2Certain(st.count > e.BadCalls), h2Above(avgLo, avgHi, e.BadAvg), slower)
	threshold := e.BadAvg
	if !m.take(bad, c.Node) {
		// The second rule applies while the worst average is below BadAvg.
		open := h2Either
		switch {
		case m.maxHi < e.BadAvg:
			open = h2Yes
		case m.maxLo >= e.BadAvg:
			open = h2No
		}
		bad = h2No
		if m.take(open, c.Node) {
			share := func(d time.Duration) time.Duration { return time.Duration(e.MaxAvgShare * float64(d)) }
			bad = all(open, h2Certain(m.allCalls > e.MinCalls), h2Above(avgLo, avgHi, e.SlowAvg), slower,
				h2Exceeds(avgLo, avgHi, share(m.maxLo), share(m.maxHi)))
			threshold = e.SlowAvg
			m.maxLo, m.maxHi = max(m.maxLo, avgLo), max(m.maxHi, avgHi)
		}
	}
	if m.take(bad, c.Node) && !c.ejected {
		c.ejected, c.EjectedAfter, c.EjectedAt = true, call, t
		if bad == h2Either {
			m.jitter = append(m.jitter, H2JitterEjection{Call: call, Conn: m.calls[call].Conn, Node: c.Node,
				Threshold: threshold, AvgLo: avgLo, AvgHi: avgHi})
		}
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

// Percentile is the p-th percentile (0 < p <= 100) by nearest rank; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// H2StrictBurst is what net/http's strict mode guarantees a burst (GoStrictBurst).
type H2StrictBurst struct {
	// Certain: holds whatever the scheduling; if not, Stalls and MaxOK are the unstalled burst's.
	Certain bool
	// Stalls: calls beyond the first wave wait out their deadline.
	Stalls bool
	MaxOK  int
	OKAt   time.Duration
	// StalledEnd is the deadline, or Forever.
	StalledEnd time.Duration
}

// GoStrictBurst predicts a burst through net/http with StrictMaxConcurrentRequests on one
// connection of limit streams. Waiters count slots reserved behind the write lock as in use
// (golang/go#70809): from 2 x limit + 1 calls it stalls, up to limit never.
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
			b.MaxOK = 0
		}
	}
	return b
}
