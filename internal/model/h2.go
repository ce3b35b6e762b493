package model

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// H2Rule is how a client picks the connection for a new stream (rules.H2Go, H2GoStrict,
// H2OkHttp).
type H2Rule = rules.H2

const DefaultH2MaxStreams = 100

// H2Node is one server address behind the host name.
type H2Node struct {
	Latency time.Duration
	// SlowAfter > 0 makes the node's requests after the first SlowAfter take SlowLatency.
	SlowAfter   int
	SlowLatency time.Duration
	// MaxStreams is SETTINGS_MAX_CONCURRENT_STREAMS (0: DefaultH2MaxStreams), known at once.
	MaxStreams int
	// Frozen makes the node write nothing from FrozenAt on; its connections stay open.
	Frozen   bool
	FrozenAt time.Duration
	// Throttle is the APNs throttle: a rejection lowers its connection's limit to 1 until the
	// next success.
	Throttle bool
}

func (n H2Node) limit() int {
	if n.MaxStreams > 0 {
		return n.MaxStreams
	}
	return DefaultH2MaxStreams
}

func (n H2Node) frozenAt(t time.Duration) bool { return n.Frozen && t >= n.FrozenAt }

// H2Ejection is the APNs interceptor's rule for giving up on a slow address (vocab.APNsRule),
// given a success's time and its address's average; an ejected connection takes no new streams.
type H2Ejection = vocab.APNsRule

// H2Client is the client's side of an H2Scenario.
type H2Client struct {
	Rule H2Rule
	// AllocationLimit caps the streams per connection (OkHttp's allocationLimit; 0: the peer's).
	AllocationLimit int
	// Eject applies the APNs interceptor's rule; nil never ejects.
	Eject *H2Ejection
	// SendPingTimeout and PingTimeout are Go's health check (0: none; PingTimeout 0: 15 s): a
	// frozen node's connection drops at lastFrame + SendPingTimeout + PingTimeout.
	SendPingTimeout, PingTimeout time.Duration
	// Deadline bounds each call (http.Client.Timeout, OkHttp's callTimeout).
	Deadline time.Duration
	// ReadTimeout bounds the wait for each stream's answer (OkHttp's readTimeout).
	ReadTimeout time.Duration
	// ConnectTime is a new connection's set-up (0: ConnectTime).
	ConnectTime time.Duration
	// StreamCost spaces the streams that start together on one connection, each timed from its
	// send (0: none).
	StreamCost time.Duration
	// Overhead is the calls' jitter for the ejection (H2Overhead).
	Overhead H2Overhead
	// Handshake says a new connection carries streams only once the server answered it.
	Handshake bool
	// Warm is how many connections are idle at the start: to the first Warm nodes with
	// rules.H2.Routes, else all to the first.
	Warm int
}

// H2Scenario is a run of calls through one HTTP/2 client pool to a host whose addresses are
// Nodes, in resolved order.
type H2Scenario struct {
	Nodes  []H2Node
	Client H2Client
	// Calls is how many calls are made; call i starts at i x Every, or at Starts[i].
	Calls  int
	Every  time.Duration
	Starts []time.Duration
	// Rejected marks the calls answered with a rejection (APNs' 400), which end ok.
	Rejected []bool
}

// H2Call is the prediction for one call.
type H2Call struct {
	// Start and End are offsets from the start of the run; End is Forever for a hang.
	Start, End time.Duration
	Outcome    vocab.Outcome
	// Node and Conn index the node and connection its stream went to.
	Node, Conn int
	NewConn    bool
	// InFlight is how many other streams its connection carried when assigned.
	InFlight int
	// Waited is how long the stream waited for a slot, a set-up and its send.
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
	Node          int
	Opened        time.Duration
	Warm          bool
	Streams, Peak int
	// EjectedAfter is the call whose end ejected it (-1: none).
	EjectedAfter int
	EjectedAt    time.Duration
	// DroppedAt is when the health check closed it, Forever if never.
	DroppedAt time.Duration
	Limits    []H2Limit
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
	// Conns lists the connections, warm ones first.
	Conns          []H2Conn
	StreamsPerNode []int
	// LastCall is per node the last call sent to it (-1: none).
	LastCall []int
	Waves    []H2Wave
	// P50 and P99 are nearest-rank percentiles, hangs as Forever.
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

// SimulateH2 predicts an H2Scenario by event simulation. At one instant: deadlines, answers,
// read timeouts, health-check drops, freezes, connections ready, arrivals; so an answer at the
// deadline is cut, one at the read timeout not. It panics on no nodes or negative values.
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
