package model

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// H2Rule picks the connection for a new stream.
type H2Rule = rules.H2

const DefaultH2MaxStreams = 100

// H2Node is one address behind the host name.
type H2Node struct {
	Latency time.Duration
	// SlowAfter > 0: requests after that many take SlowLatency.
	SlowAfter   int
	SlowLatency time.Duration
	// MaxStreams: 0 is DefaultH2MaxStreams.
	MaxStreams int
	// Frozen: nothing written from FrozenAt; connections stay open.
	Frozen   bool
	FrozenAt time.Duration
	// Throttle: a rejection sets the limit to 1 until a success (APNs).
	Throttle bool
}

func (n H2Node) limit() int {
	if n.MaxStreams > 0 {
		return n.MaxStreams
	}
	return DefaultH2MaxStreams
}

func (n H2Node) frozenAt(t time.Duration) bool { return n.Frozen && t >= n.FrozenAt }

// H2Ejection is the APNs interceptor's rule for dropping a slow address.
type H2Ejection = rules.APNsRule

// H2Client is the client's side of an H2Scenario.
type H2Client struct {
	Rule H2Rule
	// AllocationLimit: OkHttp's; 0 is the peer's.
	AllocationLimit int
	// Eject: nil never ejects.
	Eject *H2Ejection
	// Go's health check (PingTimeout 0: 15 s).
	SendPingTimeout, PingTimeout time.Duration
	// Deadline bounds each call.
	Deadline time.Duration
	// ReadTimeout bounds each stream's wait.
	ReadTimeout time.Duration
	// ConnectTime: 0 is the package's ConnectTime.
	ConnectTime time.Duration
	StreamCost  time.Duration
	Overhead    H2Overhead
	Handshake   bool
	// Warm idle connections: one per node with rules.H2.Routes, else all to the first.
	Warm int
}

// H2Scenario is calls through one HTTP/2 pool to Nodes, in resolved order.
type H2Scenario struct {
	Nodes  []H2Node
	Client H2Client
	// Call i starts at i x Every, or at Starts[i].
	Calls  int
	Every  time.Duration
	Starts []time.Duration
	// Rejected calls (APNs' 400) end ok.
	Rejected []bool
}

// H2Call is one call's prediction.
type H2Call struct {
	// End is Forever for a hang.
	Start, End time.Duration
	Outcome    vocab.Outcome
	Node, Conn int
	NewConn    bool
	// InFlight: other streams on its connection.
	InFlight int
	Waited   time.Duration
}

// Took is the call's length.
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
	// EjectedAfter: -1 is none.
	EjectedAfter int
	EjectedAt    time.Duration
	// DroppedAt: Forever if never.
	DroppedAt time.Duration
	Limits    []H2Limit
}

// H2Limit is a stream limit from At on.
type H2Limit struct {
	At    time.Duration
	Limit int
}

// H2Wave is calls that ended together with one outcome.
type H2Wave struct {
	At      time.Duration
	Outcome vocab.Outcome
	Calls   int
}

// H2Prediction predicts an H2Scenario.
type H2Prediction struct {
	Calls []H2Call
	// Conns: warm ones first.
	Conns          []H2Conn
	StreamsPerNode []int
	// LastCall: -1 is none.
	LastCall []int
	Waves    []H2Wave
	// P50 and P99: nearest rank, hangs as Forever.
	P50, P99 time.Duration
}

// NewConns counts the connections opened, warm ones not.
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

// SimulateH2 predicts an H2Scenario; at one instant: deadlines, answers, read timeouts, drops,
// freezes, connections ready, arrivals. It panics on no nodes or negative values.
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
