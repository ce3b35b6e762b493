package model

import (
	"math"
	"slices"
	"time"
)

// The APNs interceptor's ejection in the simulation, the prediction it yields, and the
// closed form of Go's strict-mode burst.

// H2Overhead is how much longer than its node's latency a call's stream takes as the APNs
// interceptor times it (from the request to the end of the body): the calls' jitter on the
// machine (exp-h measures it in its calibration). A call takes from Min to Max more; an
// address's average, from Min to MeanMax more: its calls come in waves, and one slow call (a
// garbage collection, a preempted reader) moves the average of many by little, so MeanMax is
// the most that a wave's calls took more on average, and Max the most that one call did.
type H2Overhead struct{ Min, MeanMax, Max time.Duration }

// H2Ends is a scenario's predictions at the corners of its calls' jitter (SimulateH2Ends).
type H2Ends struct {
	// Corners has a run for each set of nodes, in which every ejection decision that the
	// jitter could turn either way is "eject" for those nodes' connections and "keep" for
	// the others'. Fewest is the run with none (the first corner), Most with every node
	// (the last). They are all the same where the jitter decides nothing.
	Corners      []H2Prediction
	Fewest, Most H2Prediction
	// Jitter lists the ejections that the jitter decided, Most's first, then those of the
	// other corners at nodes Most has none for.
	Jitter []H2JitterEjection
}

// H2JitterEjection is an ejection that the calls' jitter decided: after call Call, the
// connection Conn to node Node, whose average (AvgLo to AvgHi at the overhead's two ends)
// sat above Threshold, the rule's average, with its calls' times on both sides of it.
type H2JitterEjection struct {
	Call, Conn, Node int
	Threshold        time.Duration
	AvgLo, AvgHi     time.Duration
}

// h2CornerNodes is how many nodes SimulateH2Ends takes every set of (2^n runs); beyond, it
// runs the two outer corners only.
const h2CornerNodes = 6

// SimulateH2Ends simulates s at the corners of H2Client.Overhead. The interceptor decides on
// averages and on whether a call was slower than its address's average (rules.APNsRule):
// with a call's time known only from latency + Min to latency + Max, and an average from its
// calls' latencies + Min to + MeanMax, a call of a node answering in constant time may be on
// either side of its average. A decision that holds at both ends is taken as it is; one the
// jitter could turn either way is taken both ways, by node: each corner ejects a set of
// nodes at every such chance and the others at none. A measured run lies within the
// corners' range where the jitter decides each node's fate once: the calls of one wave
// differ by tens of microseconds, its waves by hundreds, so the calls after a threshold are
// not many independent draws, and a node averaging above it may go every wave of a run
// with no call above its average, or be ejected at its first call past the count. Why by
// node, not only the two outer corners: ejecting one connection opens the next to the next
// address, so ejecting more is not always ejecting sooner (with every node ejected, the
// first comes back in the rotation). Where nothing is left to the jitter, every corner is
// SimulateH2's prediction. It panics as SimulateH2 does.
func SimulateH2Ends(s H2Scenario) H2Ends {
	if err := s.validate(); err != nil {
		panic(err)
	}
	if s.Starts != nil {
		s.Calls = len(s.Starts)
	}
	n := len(s.Nodes)
	corners := 2 // none and all
	if n <= h2CornerNodes {
		corners = 1 << n
	}
	var out H2Ends
	var others []H2JitterEjection // the other corners'
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

// h2Maybe is a decision the calls' jitter may leave open.
type h2Maybe int8

const (
	h2No h2Maybe = iota
	h2Either
	h2Yes
)

// h2Exceeds is whether a value between aLo and aHi exceeds one between bLo and bHi.
func h2Exceeds(aLo, aHi, bLo, bHi time.Duration) h2Maybe {
	switch {
	case aLo > bHi:
		return h2Yes
	case aHi <= bLo:
		return h2No
	}
	return h2Either
}

// h2Above is whether a value between lo and hi exceeds x.
func h2Above(lo, hi, x time.Duration) h2Maybe { return h2Exceeds(lo, hi, x, x) }

func h2Certain(b bool) h2Maybe {
	if b {
		return h2Yes
	}
	return h2No
}

// take resolves a decision about node's connection at the simulation's corner.
func (m *h2Sim) take(d h2Maybe, node int) bool {
	if m.eager != nil && m.eager[node] {
		return d != h2No
	}
	return d == h2Yes
}

// eject applies the interceptor's rule after call ended on c at t. The call's time and its
// address's average are known at the two ends of the overhead; see SimulateH2Ends.
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
	slower := h2Exceeds(lo, hi, avgLo, avgHi) // took > avg
	bad := all(h2Certain(st.count > e.BadCalls), h2Above(avgLo, avgHi, e.BadAvg), slower)
	threshold := e.BadAvg
	if !m.take(bad, c.Node) {
		// The second rule applies while the worst average seen (maxLo to maxHi at the two
		// ends) is below BadAvg, and compares the address's average with it.
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
// 0: none). This is net/http's behaviour, not the documented one (SimulateH2 with rules.H2GoStrict()
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
