package h2node

import "time"

// Stats is a snapshot of a node's counters since it started.
type Stats struct {
	// Conns counts the connections accepted.
	Conns int
	// Streams counts the streams each connection carried, refused ones excluded, in accept
	// order: Streams[0] is connection 1 (the "x-h2node-conn" of its answers).
	Streams []int
	// MaxStreamsPerConn is, per connection, the most streams it had in flight at once.
	MaxStreamsPerConn []int
	// Requests counts the streams accepted, answered or not.
	Requests int
	// Statuses counts the answers by status code.
	Statuses map[int]int
	// Refused counts the streams refused over the limit (RST_STREAM REFUSED_STREAM).
	Refused int
	// Cancelled counts the streams the client reset before their answer.
	Cancelled int
	// InFlight is the number of streams in flight now; MaxInFlight the most at once.
	InFlight, MaxInFlight int
}

// Stats returns a snapshot of the counters; the map and slices are copies.
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
	for _, c := range open { // still counting: their records are not final
		st.Streams[c.id-1], st.MaxStreamsPerConn[c.id-1] = c.counts()
	}
	return st
}

// Sample is the number of streams in flight on the node from At on (since the node started).
type Sample struct {
	At       time.Duration
	InFlight int
}

// Timeline returns the in-flight count at every change since the node started, the first
// sample at 0 with 0 in flight, and whether it was cut after its first 65,536 samples.
func (n *Node) Timeline() (samples []Sample, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Sample(nil), n.samples...), n.cut
}

// MaxInFlight returns the most streams in flight at once in samples between from and to
// (since the node started), counting the value in force at from.
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

// Since returns how long ago the node started: the clock of Timeline's samples.
func (n *Node) Since() time.Duration { return time.Since(n.start) }
