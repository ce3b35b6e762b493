package model

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// This file is the model of an HTTP/2 client pool (docs/http2.md): several server nodes
// behind one host name, each connection carrying many streams up to a limit, and the rules by
// which Go's net/http and OkHttp 3.x pick the connection for a new stream.

// H2Rule is how a client picks the connection for a new stream: each library's rules.H2
// (rules.H2Go, rules.H2GoStrict, rules.H2OkHttp).
type H2Rule = rules.H2

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

// H2Ejection is the APNs interceptor's rule for giving up on a slow address (rules.APNsRule
// states it), applied after each successful call with took = its stream's time and avg = its
// address's average, this call included; an ejected connection takes no new streams
// (allocationLimit = 0) and its streams in flight finish.
type H2Ejection = rules.APNsRule

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
	// ConnectTime, 1 ms). exp-h measures it for a burst (a calibration burst: the set-up
	// waits for the CPU the burst's calls take).
	ConnectTime time.Duration
	// StreamCost is the client's cost per stream on a connection in a burst: streams that
	// start together on one connection leave it one after another, StreamCost apart, in the
	// order they got their slots, and each is answered its node's latency after it left (its
	// read timeout counts from then too). A connection has one writer and one reader:
	// net/http writes each request's HEADERS and flushes it with a system call of its own,
	// under the connection's write lock, and reads each answer in the connection's one read
	// loop. 0 means none; exp-h measures it with a calibration burst.
	StreamCost time.Duration
	// Overhead is what a stream takes beyond its node's latency as the APNs interceptor
	// times it (H2Overhead): the calls' jitter. Only the ejection reads it (SimulateH2Ends);
	// the calls' times are their latencies. Zero: none.
	Overhead H2Overhead
	// Handshake says a new connection carries streams only once the server has answered it:
	// a TLS handshake, or the peer's first SETTINGS, which labrun's OkHttp-style pool waits
	// for. A connection opened to a frozen node then never becomes usable. Without it (Go's
	// h2c), the client writes its streams at once and waits for answers that do not come.
	Handshake bool
	// Warm is how many connections are open and idle at the start: to the first Warm nodes
	// in turn with rules.H2.Routes, all to the first node without it.
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
	// Waited is how long the stream waited for a slot (rules.H2.Strict), for its connection to be
	// set up, and to be sent (StreamCost).
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
	case c.SendPingTimeout < 0 || c.PingTimeout < 0 || c.Deadline < 0 || c.ReadTimeout < 0 || c.ConnectTime < 0 || c.StreamCost < 0:
		return errors.New("model: SimulateH2 needs non-negative times")
	case c.Overhead.Min < 0 || c.Overhead.MeanMax < c.Overhead.Min || c.Overhead.Max < c.Overhead.MeanMax:
		return errors.New("model: SimulateH2 needs 0 <= Overhead.Min <= .MeanMax <= .Max")
	case s.Starts != nil && s.Calls != 0 && s.Calls != len(s.Starts):
		return fmt.Errorf("model: SimulateH2: %d calls but %d starts", s.Calls, len(s.Starts))
	case s.Rejected != nil && len(s.Rejected) != max(s.Calls, len(s.Starts)):
		return fmt.Errorf("model: SimulateH2: %d calls but %d rejection marks", max(s.Calls, len(s.Starts)), len(s.Rejected))
	case slices.ContainsFunc(s.Starts, func(d time.Duration) bool { return d < 0 }):
		return errors.New("model: SimulateH2: a negative start")
	}
	for i, n := range s.Nodes {
		if n.Latency < 0 || n.SlowAfter < 0 || n.SlowLatency < 0 || n.MaxStreams < 0 || n.FrozenAt < 0 {
			return fmt.Errorf("model: SimulateH2: node %d has a negative field", i)
		}
	}
	return nil
}
