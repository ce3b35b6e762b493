package h2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"golang.org/x/net/http2"
)

// h2Nodes starts n nodes on 127.0.0.2, 127.0.0.3, ..., on one port when it is free on each
// address (as a service's addresses share one), over TLS with one CA when ca is set. Every
// node gets opts and its own extra options from per (index -> options).
func h2Nodes(t *testing.T, n int, ca *h2node.CA, per map[int][]h2node.Option, opts ...h2node.Option) []*h2node.Node {
	t.Helper()
	var nodes []*h2node.Node
	port := "0"
	for i := range n {
		o := append([]h2node.Option{}, opts...)
		o = append(o, per[i]...)
		if ca != nil {
			o = append(o, h2node.WithTLS(ca))
		}
		ip := fmt.Sprintf("127.0.0.%d", i+2)
		node, err := h2node.New(append(o, h2node.WithAddr(net.JoinHostPort(ip, port)))...)
		if err != nil && port != "0" {
			node, err = h2node.New(append(o, h2node.WithAddr(net.JoinHostPort(ip, "0")))...)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		_, port, _ = net.SplitHostPort(node.Addr)
		nodes = append(nodes, node)
	}
	return nodes
}

// h2ms is a millisecond, for the HTTP/2 tests' tables.
const h2ms = time.Millisecond

func routes(nodes []*h2node.Node) []string {
	var r []string
	for _, n := range nodes {
		r = append(r, n.Addr)
	}
	return r
}

func newH2Pool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// burst makes n calls at once to url and returns their results in call order.
func burst(t *testing.T, p *Pool, n int, url string) []*Result {
	t.Helper()
	res := make([]*Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			res[i], _ = p.Do(context.Background(), req)
		})
	}
	wg.Wait()
	return res
}

func call(t *testing.T, p *Pool, url string) *Result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := p.Do(context.Background(), req)
	return res
}

// TestH2PoolSpreads: the APNs allocation limit of 60 over 3 addresses: 250 calls at once open
// 5 connections (60, 60, 60, 60, 10) to addresses 0, 1, 2, 0, 1, as the model predicts.
func TestH2PoolSpreads(t *testing.T) {
	ca, err := h2node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ca   *h2node.CA
	}{{"h2c", nil}, {"tls", ca}} {
		t.Run(tt.name, func(t *testing.T) {
			// Calls of 500 ms: all 250 are allocated long before the first one ends.
			nodes := h2Nodes(t, 3, tt.ca, nil, h2node.WithLatency(500*time.Millisecond))
			cfg := Config{Routes: routes(nodes), AllocationLimit: 60, CallTimeout: 10 * time.Second}
			if tt.ca != nil {
				cfg.TLS = tt.ca.ClientConfig()
			}
			p := newH2Pool(t, cfg)
			base := "http://push.test"
			if tt.ca != nil {
				base = "https://push.test"
			}
			res := burst(t, p, 250, base+"/3/device/abc")
			want := model.SimulateH2(model.H2Scenario{
				Nodes:  []model.H2Node{{Latency: 500 * time.Millisecond}, {Latency: 500 * time.Millisecond}, {Latency: 500 * time.Millisecond}},
				Client: model.H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 60}, Calls: 250,
			})
			perNode := map[string]int{}
			newConns, maxInFlight := 0, 0
			for i, r := range res {
				if r.Outcome != vocab.OK || r.Status != 200 {
					t.Fatalf("call %d: %v %d %v", i, r.Outcome, r.Status, r.Err)
				}
				perNode[r.Route]++
				if r.NewConn {
					newConns++
				}
				maxInFlight = max(maxInFlight, r.InFlight)
			}
			if newConns != want.NewConns() || maxInFlight != 59 {
				t.Errorf("got %d new connections, at most %d in flight before a call; want %d, 59", newConns, maxInFlight, want.NewConns())
			}
			var conns, streams []int
			for i, n := range nodes {
				st := n.Stats()
				got := 0
				for _, s := range st.Streams {
					got += s
				}
				streams = append(streams, got)
				conns = append(conns, st.Conns)
				if perNode[n.Addr] != got {
					t.Errorf("node %d: the client counts %d streams, the node %d", i, perNode[n.Addr], got)
				}
			}
			if !reflect.DeepEqual(streams, want.StreamsPerNode) || !reflect.DeepEqual(conns, []int{2, 2, 1}) {
				t.Errorf("streams per node %v, connections per node %v; want %v, [2 2 1]", streams, conns, want.StreamsPerNode)
			}
			var got []ConnInfo
			for _, c := range p.Conns() {
				c.Limit = 0
				got = append(got, c)
			}
			wantConns := []ConnInfo{
				{ID: 1, Route: nodes[0].Addr, Streams: 60, Peak: 60}, {ID: 2, Route: nodes[1].Addr, Streams: 60, Peak: 60},
				{ID: 3, Route: nodes[2].Addr, Streams: 60, Peak: 60}, {ID: 4, Route: nodes[0].Addr, Streams: 60, Peak: 60},
				{ID: 5, Route: nodes[1].Addr, Streams: 10, Peak: 10},
			}
			if !reflect.DeepEqual(got, wantConns) {
				t.Errorf("connections:\ngot  %+v\nwant %+v", got, wantConns)
			}
		})
	}
}

// TestH2PoolPeerLimit: without a cap, the peer's limit of 10 holds from the first stream on:
// the pool waits for a new connection's SETTINGS, so no stream is refused.
func TestH2PoolPeerLimit(t *testing.T) {
	nodes := h2Nodes(t, 1, nil, nil, h2node.WithMaxStreams(10), h2node.WithLatency(300*time.Millisecond))
	p := newH2Pool(t, Config{Routes: routes(nodes), CallTimeout: 10 * time.Second})
	res := burst(t, p, 25, "http://push.test/")
	for i, r := range res {
		if r.Outcome != vocab.OK {
			t.Fatalf("call %d: %v %v", i, r.Outcome, r.Err)
		}
	}
	st := nodes[0].Stats()
	// Two connections are set up at nearly the same time: which one the node accepted first
	// varies, so the streams are compared as a set.
	got := slices.Clone(st.Streams)
	slices.Sort(got)
	if !reflect.DeepEqual(got, []int{5, 10, 10}) || st.Refused != 0 {
		t.Errorf("node: streams per connection %v, refused %d; want 10, 10 and 5 in any order, 0", st.Streams, st.Refused)
	}
}

// TestH2PoolLimits: a stream's read timeout resets the stream only; the call timeout and the
// connect timeout end the call.
func TestH2PoolLimits(t *testing.T) {
	t.Run("read timeout", func(t *testing.T) {
		nodes := h2Nodes(t, 1, nil, nil)
		p := newH2Pool(t, Config{Routes: routes(nodes), ReadTimeout: 100 * time.Millisecond})
		r := call(t, p, "http://push.test/?delay=2s")
		if r.Outcome != vocab.ReadTimeout || !errors.Is(r.Err, client.ErrReadTimeout) {
			t.Fatalf("got %v (%v), want a read timeout", r.Outcome, r.Err)
		}
		// 100 ms; up to 1.5 s on a loaded machine, never less.
		if r.Elapsed < 100*time.Millisecond || r.Elapsed > 1500*time.Millisecond {
			t.Errorf("read timeout after %v, want about 100 ms", r.Elapsed)
		}
		r = call(t, p, "http://push.test/")
		if r.Outcome != vocab.OK || r.Conn != 1 || r.NewConn {
			t.Errorf("next call: got %v on connection %d (new %v), want ok on connection 1", r.Outcome, r.Conn, r.NewConn)
		}
		// The node sees the RST_STREAM when it reads it: wait for it, 2 s at most.
		for deadline := time.Now().Add(2 * time.Second); nodes[0].Stats().Cancelled == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if st := nodes[0].Stats(); st.Conns != 1 || st.Cancelled != 1 {
			t.Errorf("node: %d connections, %d streams cancelled; want 1, 1", st.Conns, st.Cancelled)
		}
	})
	t.Run("call timeout", func(t *testing.T) {
		nodes := h2Nodes(t, 1, nil, nil)
		p := newH2Pool(t, Config{Routes: routes(nodes), CallTimeout: 150 * time.Millisecond})
		r := call(t, p, "http://push.test/?delay=2s")
		if r.Outcome != vocab.Deadline || !errors.Is(r.Err, client.ErrDeadline) {
			t.Errorf("got %v (%v), want the deadline", r.Outcome, r.Err)
		}
	})
	ca, err := h2node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*h2node.CA{nil, ca} {
		t.Run(fmt.Sprintf("connect timeout, tls %v", c != nil), func(t *testing.T) {
			// A frozen node: TCP connects, but no handshake or SETTINGS ever comes.
			nodes := h2Nodes(t, 1, c, nil)
			nodes[0].Freeze()
			cfg := Config{Routes: routes(nodes), ConnectTimeout: 150 * time.Millisecond}
			if c != nil {
				cfg.TLS = c.ClientConfig()
			}
			p := newH2Pool(t, cfg)
			r := call(t, p, "http://push.test/")
			if r.Outcome != vocab.ConnectTimeout || !r.NewConn {
				t.Errorf("got %v (%v), new connection %v; want a connect timeout on a new connection", r.Outcome, r.Err, r.NewConn)
			}
			nodes[0].Thaw()
		})
	}
}

// TestH2PoolEjectsSlowNode replays the model's "eject, rule 1" case: pairs of calls every
// 200 ms, one stream per connection; node 1 turns slow at its third request, its connection
// is ejected after it, and node 1 gets no stream after call 5. The fast node answers in
// 10 ms and the slow one in 150 ms, against a bad average of 60 ms: a loaded machine can
// make a 10 ms call take 30, not 60.
func TestH2PoolEjectsSlowNode(t *testing.T) {
	nodes := h2Nodes(t, 2, nil, map[int][]h2node.Option{1: {h2node.WithSlowAfter(2, 150*time.Millisecond)}},
		h2node.WithLatency(10*time.Millisecond))
	apns, err := NewAPNs(APNsConfig{AllocationLimit: 1, APNsRule: rules.APNsRule{BadCalls: 2, BadAvg: 60 * time.Millisecond, MinCalls: 1 << 30, SlowAvg: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	p := newH2Pool(t, Config{Routes: routes(nodes), Spread: apns, CallTimeout: 5 * time.Second})
	var onNode1 []int
	start := time.Now()
	for round := range 5 {
		time.Sleep(time.Until(start.Add(time.Duration(round) * 200 * time.Millisecond)))
		for j, r := range burst(t, p, 2, "http://push.test/") {
			if r.Outcome != vocab.OK {
				t.Fatalf("round %d: %v %v", round, r.Outcome, r.Err)
			}
			if r.Route == nodes[1].Addr {
				onNode1 = append(onNode1, 2*round+j)
			}
		}
	}
	want := model.SimulateH2(model.H2Scenario{
		Nodes:  []model.H2Node{{Latency: 10 * time.Millisecond}, {Latency: 10 * time.Millisecond, SlowAfter: 2, SlowLatency: 150 * time.Millisecond}},
		Starts: []time.Duration{0, 0, 200 * h2ms, 200 * h2ms, 400 * h2ms, 400 * h2ms, 600 * h2ms, 600 * h2ms, 800 * h2ms, 800 * h2ms},
		Client: model.H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: &model.H2Ejection{BadCalls: 2, BadAvg: 60 * time.Millisecond, MinCalls: 1 << 30, SlowAvg: time.Hour}},
	})
	// Which call of a round lands on which node depends on when each call finds its
	// connection free, which a loaded machine shifts; the rule does not. Node 1's connection
	// is ejected, node 1 gets no stream in the rounds after the model's last one, the pool
	// opens the model's connections, and the interceptor counted what node 1 got.
	if len(onNode1) == 0 || onNode1[len(onNode1)-1]/2 > want.LastCall[1]/2+1 {
		t.Errorf("calls on node 1: %v; want none after round %d", onNode1, want.LastCall[1]/2+1)
	}
	conns := p.Conns()
	ejected := false
	for _, c := range conns {
		ejected = ejected || (c.Route == nodes[1].Addr && c.Ejected)
	}
	if len(conns) != want.NewConns() || !ejected {
		t.Errorf("connections: %+v; want %d, node 1's ejected", conns, want.NewConns())
	}
	addrs, _ := apns.Stats()
	if len(addrs) != 2 || addrs[1].Calls != len(onNode1) {
		t.Errorf("interceptor statistics: %+v; want node 1 with the %d calls it got", addrs, len(onNode1))
	}
}

// TestH2PoolThrottle: after a 400 the node lowers its limit to 1; OkHttp's rule then opens a
// new connection for the streams that no longer fit, instead of waiting (Go's strict rule).
func TestH2PoolThrottle(t *testing.T) {
	nodes := h2Nodes(t, 1, nil, nil, h2node.WithThrottle(true), h2node.WithMaxStreams(10), h2node.WithLatency(200*time.Millisecond))
	p := newH2Pool(t, Config{Routes: routes(nodes), CallTimeout: 5 * time.Second})
	if r := call(t, p, "http://push.test/?status=400"); r.Status != 400 {
		t.Fatalf("got %d %v, want 400", r.Status, r.Err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for p.Conns()[0].Limit != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the connection's limit stayed %d, want 1", p.Conns()[0].Limit)
		}
		time.Sleep(time.Millisecond)
	}
	from := nodes[0].Since()
	res := burst(t, p, 5, "http://push.test/?status=400")
	for i, r := range res {
		if r.Status != 400 {
			t.Fatalf("call %d: %v %d %v", i, r.Outcome, r.Status, r.Err)
		}
	}
	samples, _ := nodes[0].Timeline()
	if got := h2node.MaxInFlight(samples, from, nodes[0].Since()); got != 5 {
		t.Errorf("in flight on the node: got at most %d, want 5 (not serialized)", got)
	}
	if got := len(p.Conns()); got != 2 {
		t.Errorf("connections: got %d, want 2", got)
	}
}

func TestH2ConfigValidate(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Routes: []string{"127.0.0.1"}},
		{Routes: []string{"127.0.0.1:1"}, ReadTimeout: -1},
		{Routes: []string{"127.0.0.1:1"}, AllocationLimit: -1},
		{Routes: []string{"127.0.0.1:1"}, MaxBody: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): got no error", cfg)
		}
	}
}

// TestH2Sniffer: the first SETTINGS counts as processed at the first Read after its bytes.
func TestH2Sniffer(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	s := newH2Sniffer(client)
	defer s.Close()
	go func() {
		fr := http2.NewFramer(server, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 7})
		fr.WritePing(false, [8]byte{})
	}()
	settled := func() bool {
		select {
		case <-s.settled:
			return true
		default:
			return false
		}
	}
	buf := make([]byte, 9+6) // exactly the SETTINGS frame
	if _, err := readFull(s, buf); err != nil {
		t.Fatal(err)
	}
	if settled() {
		t.Fatal("settled before the next read")
	}
	if _, err := s.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	if !settled() {
		t.Fatal("not settled after the next read")
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestH2PoolAbandonSetUp checks that calls cancelled while they wait for a connection's
// set-up leave it without a trace: once the node answers, the connection takes a new call
// with nothing allocated but that call's stream.
func TestH2PoolAbandonSetUp(t *testing.T) {
	node := h2Nodes(t, 1, nil, nil)[0]
	node.Freeze() // the set-up waits for the node's SETTINGS
	p := newH2Pool(t, Config{Routes: routes([]*h2node.Node{node}), ConnectTimeout: 10 * time.Second})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, node.URL+"/", nil)
			_, errs[i] = p.Do(ctx, req)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call %d: %v, want the context's deadline", i, err)
		}
	}
	if cs := p.Conns(); len(cs) != 1 || cs[0].Allocated != 0 || cs[0].Streams != 0 {
		t.Fatalf("after the cancelled calls: %+v, want one connection, nothing allocated", cs)
	}
	node.Thaw()
	req, _ := http.NewRequest(http.MethodGet, node.URL+"/", nil)
	res, err := p.Do(context.Background(), req)
	if err != nil || res.Conn != 1 || res.InFlight != 0 {
		t.Fatalf("call after the thaw: %+v, %v; want connection 1 with nothing else in flight", res, err)
	}
	if cs := p.Conns(); cs[0].Allocated != 0 || cs[0].Streams != 1 {
		t.Errorf("at the end: %+v, want 1 stream carried, none allocated", cs[0])
	}
}
