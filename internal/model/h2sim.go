package model

import (
	"container/heap"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Event kinds, in their order at one instant.
const (
	evDeadline = iota
	evAnswer
	evReadTimeout
	evDrop
	evFreeze
	evReady
	evArrive
)

type h2Event struct {
	at   time.Duration
	kind int
	id   int
	seq  int // FIFO within a kind
}

type h2Events []h2Event

func (q h2Events) Len() int { return len(q) }
func (q h2Events) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (q h2Events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *h2Events) Push(x any)   { *q = append(*q, x.(h2Event)) }
func (q *h2Events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type h2SimConn struct {
	H2Conn
	ready     time.Duration // Forever if never
	alloc     int
	active    []int
	joined    []int
	lastFrame time.Duration
	sent      time.Duration
	ejected   bool
	dropped   bool
	throttled bool
}

type h2AddrStats struct {
	count int
	// its calls' summed times at the overhead's two ends
	totalLo, totalHi time.Duration
	lastUse          time.Duration
	lastSeen         int
}

type h2Sim struct {
	s        H2Scenario
	events   h2Events
	seq      int
	calls    []H2Call
	ended    []bool
	started  []time.Duration
	conns    []*h2SimConn
	requests []int
	queue    []int
	route    int

	addrs     map[int]*h2AddrStats
	useSeq    int
	allCalls  int
	maxLo     time.Duration
	maxHi     time.Duration
	lastSweep time.Duration
	// eager nodes take jitter-open ejections (SimulateH2Ends).
	eager  []bool
	jitter []H2JitterEjection
}

func newH2Sim(s H2Scenario) *h2Sim {
	m := &h2Sim{
		s:         s,
		calls:     make([]H2Call, s.Calls),
		ended:     make([]bool, s.Calls),
		started:   make([]time.Duration, s.Calls),
		requests:  make([]int, len(s.Nodes)),
		addrs:     make(map[int]*h2AddrStats),
		lastSweep: 0,
	}
	for i := 0; i < s.Client.Warm; i++ {
		node := 0
		if s.Client.Rule.Routes {
			node = m.route % len(s.Nodes)
			m.route++
		}
		m.conns = append(m.conns, &h2SimConn{H2Conn: H2Conn{Node: node, Warm: true, EjectedAfter: -1, DroppedAt: Forever}})
	}
	for i := range m.calls {
		start := time.Duration(i) * s.Every
		if s.Starts != nil {
			start = s.Starts[i]
		}
		m.calls[i] = H2Call{Start: start, End: Forever, Outcome: vocab.Hang, Node: -1, Conn: -1}
		m.started[i] = -1
		m.push(start, evArrive, i)
		if s.Client.Deadline > 0 {
			m.push(start+s.Client.Deadline, evDeadline, i)
		}
	}
	for i, n := range s.Nodes {
		if n.Frozen {
			m.push(n.FrozenAt, evFreeze, i)
		}
	}
	return m
}

func (m *h2Sim) push(at time.Duration, kind, id int) {
	heap.Push(&m.events, h2Event{at: at, kind: kind, id: id, seq: m.seq})
	m.seq++
}

func (m *h2Sim) connectTime() time.Duration {
	if m.s.Client.ConnectTime > 0 {
		return m.s.Client.ConnectTime
	}
	return ConnectTime
}

func (m *h2Sim) pingTimeout() time.Duration {
	if m.s.Client.PingTimeout > 0 {
		return m.s.Client.PingTimeout
	}
	return 15 * time.Second
}

// limit is the node's limit (1 while throttled), capped by the allocation limit.
func (m *h2Sim) limit(c *h2SimConn) int {
	l := m.s.Nodes[c.Node].limit()
	if c.throttled {
		l = 1
	}
	if a := m.s.Client.AllocationLimit; a > 0 && m.s.Client.Rule.Routes {
		l = min(l, a)
	}
	return l
}

func (m *h2Sim) run() {
	for m.events.Len() > 0 {
		e := heap.Pop(&m.events).(h2Event)
		switch e.kind {
		case evArrive:
			m.arrive(e.id, e.at)
		case evDeadline:
			m.end(e.id, e.at, vocab.Deadline)
		case evAnswer:
			m.answer(e.id, e.at)
		case evReadTimeout:
			m.end(e.id, e.at, vocab.ReadTimeout)
		case evDrop:
			m.drop(e.id, e.at)
		case evFreeze:
			m.freeze(e.id, e.at)
		case evReady:
			m.ready(e.id, e.at)
		}
	}
}

func (m *h2Sim) arrive(call int, t time.Duration) {
	if m.ended[call] {
		return
	}
	var pick *h2SimConn
	k := -1
	for i, c := range m.conns {
		if c.dropped || c.ejected {
			continue
		}
		if m.s.Client.Rule.Strict {
			pick, k = c, i
			break
		}
		if c.alloc < m.limit(c) {
			pick, k = c, i
			break
		}
	}
	newConn := false
	if pick == nil {
		k, newConn = m.open(t), true
		pick = m.conns[k]
	}
	cl := &m.calls[call]
	cl.Conn, cl.Node, cl.NewConn = k, pick.Node, newConn
	if m.s.Client.Rule.Strict && pick.alloc >= m.limit(pick) {
		cl.InFlight = pick.alloc
		m.queue = append(m.queue, call)
		return
	}
	m.assign(call, pick, t)
}

func (m *h2Sim) assign(call int, c *h2SimConn, t time.Duration) {
	cl := &m.calls[call]
	if !m.s.Client.Rule.Strict || len(m.queue) == 0 || m.queue[0] != call {
		cl.InFlight = c.alloc
	}
	c.alloc++
	if c.ready > t {
		c.joined = append(c.joined, call)
		return
	}
	m.stream(call, c, t)
}

func (m *h2Sim) open(t time.Duration) int {
	node := 0
	if m.s.Client.Rule.Routes {
		node = m.route % len(m.s.Nodes)
		m.route++
	}
	c := &h2SimConn{H2Conn: H2Conn{Node: node, Opened: t, EjectedAfter: -1, DroppedAt: Forever}}
	c.ready = t + m.connectTime()
	n := m.s.Nodes[node]
	if m.s.Client.Handshake && n.frozenAt(c.ready) {
		c.ready = Forever
	}
	c.lastFrame = c.ready
	m.conns = append(m.conns, c)
	k := len(m.conns) - 1
	if c.ready != Forever {
		m.push(c.ready, evReady, k)
	}
	return k
}

// ready starts the streams waiting for k; on a frozen node it arms the health check.
func (m *h2Sim) ready(k int, t time.Duration) {
	c := m.conns[k]
	if m.s.Nodes[c.Node].frozenAt(t) && m.s.Client.SendPingTimeout > 0 {
		m.push(t+m.s.Client.SendPingTimeout+m.pingTimeout(), evDrop, k)
	}
	joined := c.joined
	c.joined = nil
	for _, call := range joined {
		if !m.ended[call] {
			m.stream(call, c, t)
		}
	}
}

// stream starts call's stream on c, after those before it with a StreamCost.
func (m *h2Sim) stream(call int, c *h2SimConn, t time.Duration) {
	if sc := m.s.Client.StreamCost; sc > 0 {
		t = max(t, c.sent) + sc
		c.sent = t
	}
	cl := &m.calls[call]
	m.started[call] = t
	cl.Waited = t - cl.Start
	c.active = append(c.active, call)
	c.Streams++
	c.Peak = max(c.Peak, len(c.active))
	n := m.s.Nodes[c.Node]
	m.requests[c.Node]++
	lat := n.Latency
	if n.SlowAfter > 0 && m.requests[c.Node] > n.SlowAfter {
		lat = n.SlowLatency
	}
	answered := !n.frozenAt(t + lat)
	if answered {
		m.push(t+lat, evAnswer, call)
	}
	if rt := m.s.Client.ReadTimeout; rt > 0 && (!answered || lat > rt) {
		m.push(t+rt, evReadTimeout, call)
	}
}

func (m *h2Sim) answer(call int, t time.Duration) {
	if m.ended[call] {
		return
	}
	c := m.conns[m.calls[call].Conn]
	c.lastFrame = max(c.lastFrame, t)
	m.throttle(call, c, t)
	m.end(call, t, vocab.OK)
	if e := m.s.Client.Eject; e != nil {
		m.eject(*e, call, c, t)
	}
}

func (m *h2Sim) throttle(call int, c *h2SimConn, t time.Duration) {
	if !m.s.Nodes[c.Node].Throttle {
		return
	}
	rejected := m.s.Rejected != nil && m.s.Rejected[call]
	if rejected == c.throttled {
		return
	}
	c.throttled = rejected
	c.Limits = append(c.Limits, H2Limit{At: t, Limit: m.limit(c)})
}

func (m *h2Sim) end(call int, t time.Duration, o vocab.Outcome) {
	if m.ended[call] {
		return
	}
	m.ended[call] = true
	cl := &m.calls[call]
	cl.End, cl.Outcome = t, o
	if i := slices.Index(m.queue, call); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
		cl.Waited = t - cl.Start
		return
	}
	if cl.Conn < 0 {
		return
	}
	c := m.conns[cl.Conn]
	if m.started[call] < 0 {
		cl.Waited = t - cl.Start
		if i := slices.Index(c.joined, call); i >= 0 {
			c.joined = slices.Delete(c.joined, i, i+1)
		}
	} else if i := slices.Index(c.active, call); i >= 0 {
		c.active = slices.Delete(c.active, i, i+1)
	}
	c.alloc--
	m.grant(c, t)
}

func (m *h2Sim) grant(c *h2SimConn, t time.Duration) {
	for len(m.queue) > 0 && !c.dropped && c.alloc < m.limit(c) {
		call := m.queue[0]
		m.assign(call, c, t)
		m.queue = m.queue[1:]
	}
}

// freeze arms the health check of node's connections from their last answer or PING.
func (m *h2Sim) freeze(node int, t time.Duration) {
	spt := m.s.Client.SendPingTimeout
	if spt <= 0 {
		return
	}
	for k, c := range m.conns {
		if c.Node != node || c.dropped || c.ready > t || c.ready == Forever {
			continue
		}
		last := c.lastFrame
		if j := (t - last - 1) / spt; j > 0 {
			last += j * spt
		}
		m.push(last+spt+m.pingTimeout(), evDrop, k)
	}
}

// drop closes k: its streams fail, its waiters move to a new one.
func (m *h2Sim) drop(k int, t time.Duration) {
	c := m.conns[k]
	if c.dropped {
		return
	}
	c.dropped, c.DroppedAt = true, t
	for _, call := range slices.Clone(c.active) {
		m.end(call, t, vocab.Failed)
	}
	if m.s.Client.Rule.Strict && len(m.queue) > 0 {
		waiting := m.queue
		m.queue = nil
		nk := m.open(t)
		for _, call := range waiting {
			m.calls[call].Conn, m.calls[call].Node = nk, m.conns[nk].Node
			m.queue = append(m.queue, call)
		}
		m.grant(m.conns[nk], t)
	}
}
