package model

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/vocab"
)

// This file is the model of an HTTP/2 client pool (lab-spec section 6): several server nodes
// behind one host name, each connection carrying many streams up to a limit, and the rules by
// which Go's net/http and OkHttp 3.x pick the connection for a new stream.

// H2Rule is how a client picks the connection for a new stream.
type H2Rule string

// The rules.
const (
	// H2Go is net/http with HTTP2Config.StrictMaxConcurrentRequests false (the default): the
	// first connection with a free stream slot; when every connection is at the peer's limit,
	// a new connection. Go dials the host name, and the dialer takes the first address that
	// answers: every connection goes to the first node. This is the documented behaviour:
	// one new connection per full set; what net/http measurably does in a burst differs
	// (docs/http2.md).
	H2Go H2Rule = "go"
	// H2GoStrict is net/http with StrictMaxConcurrentRequests true, as documented: one
	// connection, and a stream that finds it at the peer's limit waits, first come first
	// served, for a slot.
	H2GoStrict H2Rule = "go-strict"
	// H2OkHttp is OkHttp 3.x: the first connection whose allocations are below its
	// allocationLimit (the peer's limit, or a cap) takes the stream; when there is none, a new
	// connection to the next route (resolved address), in turn. A connection being set up
	// counts the streams that wait for it.
	H2OkHttp H2Rule = "okhttp"
)

// DefaultH2MaxStreams is the stream limit of a node that sets none: 100.
const DefaultH2MaxStreams = 100

// H2Node is one server address behind the host name.
type H2Node struct {
	// Latency is how long the node takes to answer a request.
	Latency time.Duration
	// SlowAfter > 0 makes every request after the node's first SlowAfter take SlowLatency.
	// Requests are counted in the order their streams start.
	SlowAfter   int
	SlowLatency time.Duration
	// MaxStreams is the SETTINGS_MAX_CONCURRENT_STREAMS the node advertises (0 means
	// DefaultH2MaxStreams). The model takes it as known from the start: the window before a
	// new connection's SETTINGS arrive is not modelled.
	MaxStreams int
	// Frozen makes the node hang from FrozenAt on: nothing it would write at or after that
	// instant is written (answers, PING acknowledgements, TLS handshakes), while its
	// connections stay open.
	Frozen   bool
	FrozenAt time.Duration
	// Throttle is the APNs throttle: when the node answers a rejected call (H2Scenario.Rejected)
	// on a connection, it lowers that connection's stream limit to 1, and its next successful
	// answer there restores the limit. The client takes the new limit with the answer (the
	// SETTINGS frame follows it on the wire), before the answer frees the stream's slot.
	Throttle bool
}

func (n H2Node) limit() int {
	if n.MaxStreams > 0 {
		return n.MaxStreams
	}
	return DefaultH2MaxStreams
}

func (n H2Node) frozenAt(t time.Duration) bool { return n.Frozen && t >= n.FrozenAt }

// H2Ejection is the APNs interceptor's rule for giving up on a slow address. After each
// successful call, with took = its stream's time and avg = its address's average (this call
// included):
//
//   - if the address has more than BadCalls calls, avg > BadAvg and took > avg, the
//     connection the call used takes no new streams (allocationLimit = 0; streams in flight
//     finish);
//   - else, as long as the worst average seen (maxAvg) is below BadAvg: if more than MinCalls
//     calls were made in all, avg > SlowAvg, took > avg and avg > MaxAvgShare x maxAvg, the
//     connection takes no new streams either; then maxAvg = max(maxAvg, avg).
//
// Statistics are kept for MaxAddrs addresses at most (the least recently used is forgotten
// first); every Sweep, entries unused for IdleDrop or longer are dropped. A zero Sweep or
// IdleDrop never drops; a zero MaxAddrs keeps every address.
type H2Ejection struct {
	BadCalls    int
	BadAvg      time.Duration
	MinCalls    int
	SlowAvg     time.Duration
	MaxAvgShare float64
	MaxAddrs    int
	IdleDrop    time.Duration
	Sweep       time.Duration
}

// APNsEjection returns the rule with the production values of the APNs sender's interceptor
// (lab-spec section 6): 20 calls, 20 s, 1,000 calls, 5 s, 0.9, 100 addresses, 10 minutes, a
// sweep every minute.
func APNsEjection() H2Ejection {
	return H2Ejection{
		BadCalls: 20, BadAvg: 20 * time.Second, MinCalls: 1000, SlowAvg: 5 * time.Second,
		MaxAvgShare: 0.9, MaxAddrs: 100, IdleDrop: 10 * time.Minute, Sweep: time.Minute,
	}
}

// H2Client is the client's side of an H2Scenario.
type H2Client struct {
	Rule H2Rule
	// AllocationLimit caps the streams per connection below the peer's limit (OkHttp's
	// allocationLimit as the APNs interceptor sets it, 60); 0 means the peer's limit.
	AllocationLimit int
	// Eject applies the APNs interceptor's rule; nil never ejects.
	Eject *H2Ejection
	// SendPingTimeout and PingTimeout are Go's health check: after SendPingTimeout without a
	// frame, a PING; no answer within PingTimeout closes the connection and fails its streams
	// (vocab.Failed). A frozen node's connection is dropped at lastFrame + SendPingTimeout +
	// PingTimeout. SendPingTimeout 0 means no health check; PingTimeout 0 means 15 s.
	SendPingTimeout, PingTimeout time.Duration
	// Deadline bounds each call from its start (http.Client.Timeout, OkHttp's callTimeout).
	Deadline time.Duration
	// ReadTimeout bounds the wait for each stream's answer (OkHttp's readTimeout): a stream
	// answered after longer than it ends with a read timeout at start + ReadTimeout; its
	// connection carries on.
	ReadTimeout time.Duration
	// ConnectTime is how long a new connection takes before it carries streams (0 means
	// ConnectTime, 1 ms).
	ConnectTime time.Duration
	// Handshake says a new connection carries streams only once the server has answered it:
	// a TLS handshake, or the peer's first SETTINGS, which labrun's OkHttp-style pool waits
	// for. A connection opened to a frozen node then never becomes usable. Without it (Go's
	// h2c), the client writes its streams at once and waits for answers that do not come.
	Handshake bool
	// Warm is how many connections are open and idle at the start: to the first Warm nodes
	// in turn with H2OkHttp, all to the first node with Go's rules.
	Warm int
}

// H2Scenario is a run of calls through one HTTP/2 client pool to a host name whose addresses
// are Nodes, in resolved order.
type H2Scenario struct {
	Nodes  []H2Node
	Client H2Client
	// Calls is how many calls are made; call i starts at i x Every (0: all at once), or at
	// Starts[i] when Starts is given (then Calls must be 0 or len(Starts)).
	Calls  int
	Every  time.Duration
	Starts []time.Duration
	// Rejected marks the calls the nodes answer with a rejection (APNs: 400 BadDeviceToken);
	// nil rejects none. A rejection is an answer: the call ends ok. It matters only to a node
	// with Throttle.
	Rejected []bool
}

// H2Call is the prediction for one call.
type H2Call struct {
	// Start and End are offsets from the start of the run; End is Forever for a hang.
	Start, End time.Duration
	Outcome    vocab.Outcome
	// Node is the node (index in H2Scenario.Nodes) and Conn the connection (index in
	// H2Prediction.Conns) the call's stream went to.
	Node, Conn int
	// NewConn says the call opened its connection.
	NewConn bool
	// InFlight is how many streams its connection carried when the call was assigned to it,
	// itself not counted.
	InFlight int
	// Waited is how long the stream waited for a slot (H2GoStrict) or for its connection to be
	// set up.
	Waited time.Duration
}

// Took is how long the call lasted.
func (c H2Call) Took() time.Duration {
	if c.End == Forever {
		return Forever
	}
	return c.End - c.Start
}

// H2Conn is one connection of a prediction.
type H2Conn struct {
	Node int
	// Opened is when the connection was opened (0 for a warm one).
	Opened time.Duration
	Warm   bool
	// Streams is how many streams it carried; Peak the most at once.
	Streams, Peak int
	// EjectedAfter is the call whose completion made the interceptor eject the connection,
	// -1 if none; EjectedAt when.
	EjectedAfter int
	EjectedAt    time.Duration
	// DroppedAt is when the health check closed the connection, Forever if never.
	DroppedAt time.Duration
	// Limits lists the changes of its stream limit by the node's throttle, in time order.
	Limits []H2Limit
}

// H2Limit is a change of a connection's stream limit: from At on, Limit.
type H2Limit struct {
	At    time.Duration
	Limit int
}

// H2Wave is a group of calls that ended at the same instant with the same outcome.
type H2Wave struct {
	At      time.Duration
	Outcome vocab.Outcome
	Calls   int
}

// H2Prediction is what the model predicts for an H2Scenario.
type H2Prediction struct {
	Calls []H2Call
	// Conns lists the connections, warm ones first, then in the order they were opened.
	Conns []H2Conn
	// StreamsPerNode counts the calls each node received.
	StreamsPerNode []int
	// LastCall is, per node, the index of the last call sent to it (-1: none): after it, the
	// node received no more streams.
	LastCall []int
	// Waves are the calls' ends grouped by instant and outcome, in time order.
	Waves []H2Wave
	// P50 and P99 are percentiles (nearest rank) of the calls' durations, hangs as Forever.
	P50, P99 time.Duration
}

// NewConns is how many connections the run opened, warm ones not counted.
func (p H2Prediction) NewConns() int {
	n := 0
	for _, c := range p.Conns {
		if !c.Warm {
			n++
		}
	}
	return n
}

// Outcomes counts the calls by outcome.
func (p H2Prediction) Outcomes() map[vocab.Outcome]int {
	m := make(map[vocab.Outcome]int)
	for _, c := range p.Calls {
		m[c.Outcome]++
	}
	return m
}

// SimulateH2 predicts an H2Scenario: an event simulation in which, at one instant, events are
// taken in this order: call deadlines, answers, read timeouts, health-check drops, freezes,
// connections becoming usable, calls arriving (in call order). So an answer at the instant of
// the deadline is cut, and one at the instant of the read timeout is not (a limit fires only
// when the wait is strictly longer); a slot freed at an instant serves a call arriving then.
// It panics on a scenario without nodes or with negative counts or times.
func SimulateH2(s H2Scenario) H2Prediction {
	if err := s.validate(); err != nil {
		panic(err)
	}
	if s.Starts != nil {
		s.Calls = len(s.Starts)
	}
	m := newH2Sim(s)
	m.run()
	return m.prediction()
}

func (s H2Scenario) validate() error {
	c := s.Client
	switch {
	case len(s.Nodes) == 0:
		return errors.New("model: SimulateH2 needs at least one node")
	case s.Calls < 0 || s.Every < 0 || c.AllocationLimit < 0 || c.Warm < 0:
		return errors.New("model: SimulateH2 needs Calls, Every, AllocationLimit and Warm >= 0")
	case c.SendPingTimeout < 0 || c.PingTimeout < 0 || c.Deadline < 0 || c.ReadTimeout < 0 || c.ConnectTime < 0:
		return errors.New("model: SimulateH2 needs non-negative times")
	case s.Starts != nil && s.Calls != 0 && s.Calls != len(s.Starts):
		return fmt.Errorf("model: SimulateH2: %d calls but %d starts", s.Calls, len(s.Starts))
	case s.Rejected != nil && len(s.Rejected) != max(s.Calls, len(s.Starts)):
		return fmt.Errorf("model: SimulateH2: %d calls but %d rejection marks", max(s.Calls, len(s.Starts)), len(s.Rejected))
	case slices.ContainsFunc(s.Starts, func(d time.Duration) bool { return d < 0 }):
		return errors.New("model: SimulateH2: a negative start")
	case c.Rule != H2Go && c.Rule != H2GoStrict && c.Rule != H2OkHttp:
		return fmt.Errorf("model: SimulateH2: unknown rule %q", c.Rule)
	}
	for i, n := range s.Nodes {
		if n.Latency < 0 || n.SlowAfter < 0 || n.SlowLatency < 0 || n.MaxStreams < 0 || n.FrozenAt < 0 {
			return fmt.Errorf("model: SimulateH2: node %d has a negative field", i)
		}
	}
	return nil
}

// The kinds of events, in the order they are taken at one instant.
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
	id   int // call, connection or node, by kind
	seq  int // insertion order: ties within a kind go first in, first out
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
	ready     time.Duration // when it carries streams; Forever if never
	alloc     int           // streams assigned and not ended
	active    []int         // calls streaming on it (started, not ended)
	joined    []int         // calls waiting for it to be ready
	lastFrame time.Duration // last frame the client read on it
	ejected   bool
	dropped   bool
	throttled bool // the node's throttle holds its limit at 1
}

type h2AddrStats struct {
	count    int
	total    time.Duration
	lastUse  time.Duration
	lastSeen int // order of last use, for the least recently used
}

type h2Sim struct {
	s        H2Scenario
	events   h2Events
	seq      int
	calls    []H2Call
	ended    []bool
	started  []time.Duration // stream start per call, -1 before
	conns    []*h2SimConn
	requests []int // per node: streams started (for SlowAfter)
	queue    []int // H2GoStrict: calls waiting for a slot, first come first
	route    int   // H2OkHttp: the next route for a new connection

	// The interceptor's state.
	addrs     map[int]*h2AddrStats
	useSeq    int
	allCalls  int
	maxAvg    time.Duration
	lastSweep time.Duration
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
		if s.Client.Rule == H2OkHttp {
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

// limit is a connection's stream limit: the node's (1 while its throttle holds), capped by
// the allocation limit.
func (m *h2Sim) limit(c *h2SimConn) int {
	l := m.s.Nodes[c.Node].limit()
	if c.throttled {
		l = 1
	}
	if a := m.s.Client.AllocationLimit; a > 0 && m.s.Client.Rule == H2OkHttp {
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

// arrive assigns a call to a connection by the client's rule.
func (m *h2Sim) arrive(call int, t time.Duration) {
	if m.ended[call] {
		return // a zero deadline: cut before it started
	}
	var pick *h2SimConn
	k := -1
	for i, c := range m.conns {
		if c.dropped || c.ejected {
			continue
		}
		if m.s.Client.Rule == H2GoStrict {
			pick, k = c, i // the one live connection; a full one makes the call wait
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
	if m.s.Client.Rule == H2GoStrict && pick.alloc >= m.limit(pick) {
		cl.InFlight = pick.alloc
		m.queue = append(m.queue, call)
		return
	}
	m.assign(call, pick, t)
}

// assign gives the call a slot on c; it streams now, or when c is ready.
func (m *h2Sim) assign(call int, c *h2SimConn, t time.Duration) {
	cl := &m.calls[call]
	if m.s.Client.Rule != H2GoStrict || len(m.queue) == 0 || m.queue[0] != call {
		cl.InFlight = c.alloc
	}
	c.alloc++
	if c.ready > t {
		c.joined = append(c.joined, call)
		return
	}
	m.stream(call, c, t)
}

// open opens a new connection at t and returns its index.
func (m *h2Sim) open(t time.Duration) int {
	node := 0
	if m.s.Client.Rule == H2OkHttp {
		node = m.route % len(m.s.Nodes)
		m.route++
	}
	c := &h2SimConn{H2Conn: H2Conn{Node: node, Opened: t, EjectedAfter: -1, DroppedAt: Forever}}
	c.ready = t + m.connectTime()
	n := m.s.Nodes[node]
	if m.s.Client.Handshake && n.frozenAt(c.ready) {
		c.ready = Forever // the handshake is never answered
	}
	c.lastFrame = c.ready
	m.conns = append(m.conns, c)
	k := len(m.conns) - 1
	if c.ready != Forever {
		m.push(c.ready, evReady, k)
	}
	return k
}

// ready starts the streams that waited for connection k; on a frozen node (h2c) it arms the
// health check, which no PING answer will reset.
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

// stream starts a call's stream on c at t and schedules how it ends.
func (m *h2Sim) stream(call int, c *h2SimConn, t time.Duration) {
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

// answer ends a call with its answer and applies the interceptor's rule.
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

// throttle applies the node's throttle to the answer of call on c at t: a rejection lowers
// c's limit to 1, the next success restores it.
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

// end ends a call at t with outcome o and frees its slot.
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
		cl.Waited = t - cl.Start // waited for a connection that never became usable
		if i := slices.Index(c.joined, call); i >= 0 {
			c.joined = slices.Delete(c.joined, i, i+1)
		}
	} else if i := slices.Index(c.active, call); i >= 0 {
		c.active = slices.Delete(c.active, i, i+1)
	}
	c.alloc--
	m.grant(c, t)
}

// grant gives freed slots of c to the calls waiting for one (H2GoStrict).
func (m *h2Sim) grant(c *h2SimConn, t time.Duration) {
	for len(m.queue) > 0 && !c.dropped && c.alloc < m.limit(c) {
		call := m.queue[0]
		m.assign(call, c, t)
		m.queue = m.queue[1:]
	}
}

// freeze arms the health check of every usable connection to node at t: the last frame the
// client read is the later of its last answer and the last PING answered before t.
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
			last += j * spt // PINGs sent while the node was healthy were answered
		}
		m.push(last+spt+m.pingTimeout(), evDrop, k)
	}
}

// drop closes connection k (the health check): its streams fail, and the calls waiting for a
// slot on it move to a new connection.
func (m *h2Sim) drop(k int, t time.Duration) {
	c := m.conns[k]
	if c.dropped {
		return
	}
	c.dropped, c.DroppedAt = true, t
	for _, call := range slices.Clone(c.active) {
		m.end(call, t, vocab.Failed)
	}
	if m.s.Client.Rule == H2GoStrict && len(m.queue) > 0 {
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
