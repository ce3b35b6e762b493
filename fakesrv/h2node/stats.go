package h2node

import "time"

// Stats is a snapshot of a node's counters.
type Stats struct {
	Conns int
	// Streams counts each connection's streams, refused excluded: Streams[0] is connection 1.
	Streams []int
	// MaxStreamsPerConn is each connection's most streams in flight at once.
	MaxStreamsPerConn []int
	// Requests counts the streams accepted.
	Requests int
	// Statuses counts answers by status.
	Statuses map[int]int
	// Refused counts streams refused over the limit.
	Refused int
	// Cancelled counts streams the client reset before their answer.
	Cancelled             int
	InFlight, MaxInFlight int
}

// Stats returns a snapshot; the map and slices are copies.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	records := append([]connRecord(nil), n.records...)
	open := make([]*conn, 0, len(n.open))
	for c := range n.open {
		open = append(open, c)
	}
	st := Stats{
		Conns:       len(records),
		Requests:    n.requests,
		Statuses:    make(map[int]int, len(n.statuses)),
		Refused:     n.refused,
		Cancelled:   n.cancelled,
		InFlight:    n.inFlight,
		MaxInFlight: n.maxInFlight,
	}
	for code, k := range n.statuses {
		st.Statuses[code] = k
	}
	n.mu.Unlock()
	if len(records) > 0 {
		st.Streams, st.MaxStreamsPerConn = make([]int, len(records)), make([]int, len(records))
	}
	for i, r := range records {
		st.Streams[i], st.MaxStreamsPerConn[i] = int(r.streams), int(r.peak)
	}
	for _, c := range open { // their records are not final
		st.Streams[c.id-1], st.MaxStreamsPerConn[c.id-1] = c.counts()
	}
	return st
}

// Sample is the streams in flight from At on (since the node started).
type Sample struct {
	At       time.Duration
	InFlight int
}

// Timeline returns the in-flight count at every change, from 0 at 0, and whether it was cut
// after maxSamples samples.
func (n *Node) Timeline() (samples []Sample, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Sample(nil), n.samples...), n.cut
}

// MaxInFlight returns the most streams in flight between from and to, the value at from
// included.
func MaxInFlight(samples []Sample, from, to time.Duration) int {
	peak := 0
	for i, s := range samples {
		if s.At > to {
			break
		}
		if s.At >= from || i+1 == len(samples) || samples[i+1].At > from {
			peak = max(peak, s.InFlight)
		}
	}
	return peak
}

// Since returns how long ago the node started, Timeline's clock.
func (n *Node) Since() time.Duration { return time.Since(n.start) }
