// Package h2node is an HTTP/2 "node": one of several servers answering for one name, as APNs's
// api.push.apple.com, on loopback addresses. It speaks HTTP/2 frame by frame
// (golang.org/x/net/http2's Framer and hpack) to do what net/http's server does not let a
// handler do: lower SETTINGS_MAX_CONCURRENT_STREAMS while running (the APNs throttle), freeze
// (a hung peer), and count connections and streams. Its bounds are in docs/serve.md.
//
// A request's path is not routed; its query may hold status=CODE (answer CODE instead of 200;
// a 400 carries {"reason":"BadDeviceToken"}) and delay=DUR (instead of the node's latency, at
// most MaxDelay). The answer carries "x-h2node-conn", the connection's number.
package h2node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/accept"
)

// DefaultMaxStreams is RFC 9113's recommended minimum and Go's server default.
const DefaultMaxStreams = 100

// MaxDelay caps every latency and delay=, a safety net.
const MaxDelay = 10 * time.Minute

// maxSamples bounds the in-flight timeline.
const maxSamples = 1 << 16

const handshakeTimeout = 10 * time.Second

// DefaultIdleTimeout is how long a connection may carry no stream and send nothing before GOAWAY.
const DefaultIdleTimeout = 2 * time.Minute

// writeTimeout bounds every write: a client that stops reading loses its connection.
const writeTimeout = 10 * time.Second

// maxHeaderList is the SETTINGS_MAX_HEADER_LIST_SIZE enforced: beyond, 431; far beyond, the
// connection ends.
const maxHeaderList = 64 << 10

// maxFrameSize is SETTINGS_MAX_FRAME_SIZE's initial value, never raised.
const maxFrameSize = 16 << 10

// Node is an HTTP/2 server on a loopback address. Create it with New, stop it with Close; its
// methods are safe for concurrent use.
type Node struct {
	// Addr is "127.0.0.2:PORT".
	Addr string
	// URL is "https://Addr", or "http://Addr" for h2c.
	URL string

	opts     options
	ln       net.Listener
	tlsCfg   *tls.Config
	client   *tls.Config
	start    time.Time
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	done     <-chan struct{}
	wg       sync.WaitGroup
	closeErr error
	once     sync.Once

	mu          sync.Mutex   // guards the fields below
	records     []connRecord // conn.id is index + 1
	open        map[*conn]struct{}
	requests    int // for WithSlowAfter
	statuses    map[int]int
	refused     int
	cancelled   int
	inFlight    int
	maxInFlight int
	samples     []Sample
	cut         bool
	thaw        chan struct{} // closed while the node is not frozen
}

// New starts a node on WithAddr's address, serving in the background.
func New(opts ...Option) (*Node, error) {
	o := options{addr: "127.0.0.1:0", maxStreams: DefaultMaxStreams, idleTimeout: DefaultIdleTimeout, writeTimeout: writeTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.maxStreams == 0:
		return nil, errors.New("h2node: max streams must be at least 1, got 0")
	case o.idleTimeout <= 0:
		return nil, fmt.Errorf("h2node: idle timeout must be positive, got %v", o.idleTimeout)
	case o.latency < 0 || o.latency > MaxDelay:
		return nil, fmt.Errorf("h2node: latency must be between 0 and %v, got %v", MaxDelay, o.latency)
	case o.slowAfter < 0:
		return nil, fmt.Errorf("h2node: slow after must not be negative, got %d", o.slowAfter)
	case o.slowLatency < 0 || o.slowLatency > MaxDelay:
		return nil, fmt.Errorf("h2node: slow latency must be between 0 and %v, got %v", MaxDelay, o.slowLatency)
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return nil, fmt.Errorf("h2node: listen address: %w", err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return nil, fmt.Errorf("h2node: refusing to listen on %s: not a loopback IP address", o.addr)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("h2node: listen on %s: %w", o.addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{
		Addr:     ln.Addr().String(),
		opts:     o,
		ln:       ln,
		start:    time.Now(),
		ctx:      ctx,
		cancel:   cancel,
		done:     ctx.Done(),
		statuses: make(map[int]int),
		open:     make(map[*conn]struct{}),
		thaw:     make(chan struct{}),
	}
	close(n.thaw)
	n.URL = "http://" + n.Addr
	if o.useTLS {
		if err := n.setupTLS(ip.String()); err != nil {
			_ = ln.Close()
			cancel()
			return nil, err
		}
		n.URL = "https://" + n.Addr
	}
	n.samples = append(n.samples, Sample{})
	n.wg.Add(1)
	go n.accept(ln)
	return n, nil
}

func (n *Node) setupTLS(ip string) error {
	ca := n.opts.ca
	if ca == nil {
		var err error
		if ca, err = NewCA(); err != nil {
			return err
		}
	}
	cfg, err := ca.ServerConfig(ip, "localhost")
	if err != nil {
		return err
	}
	n.tlsCfg, n.client = cfg, ca.ClientConfig()
	return nil
}

// ClientTLS returns a new configuration trusting the node's certificate (WithTLS); nil for h2c.
func (n *Node) ClientTLS() *tls.Config {
	if n.client == nil {
		return nil
	}
	return n.client.Clone()
}

// Close closes the listener and connections, ends streams unanswered, and waits for the node's
// goroutines.
func (n *Node) Close() error {
	n.once.Do(func() {
		n.cancel()
		n.closeErr = n.ln.Close()
		n.mu.Lock()
		open := make([]*conn, 0, len(n.open))
		for c := range n.open {
			open = append(open, c)
		}
		n.mu.Unlock()
		for _, c := range open {
			c.close()
		}
		n.wg.Wait()
	})
	return n.closeErr
}

// Freeze makes the node a hung peer: it reads, writes and answers nothing while the kernel
// keeps its connections open.
func (n *Node) Freeze() {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.thaw:
		n.thaw = make(chan struct{})
	default:
	}
}

// Thaw ends a Freeze: reading and writing resume.
func (n *Node) Thaw() {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.thaw:
	default:
		close(n.thaw)
	}
}

// awaitThaw waits while frozen; false when stop or the node closed.
func (n *Node) awaitThaw(stop <-chan struct{}) bool {
	n.mu.Lock()
	thaw := n.thaw
	n.mu.Unlock()
	select {
	case <-thaw:
		return true
	case <-stop:
		return false
	case <-n.done:
		return false
	}
}

func (n *Node) frozen() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.thaw:
		return false
	default:
		return true
	}
}

// accept accepts until the node closes, waiting out other errors (EMFILE) with a back-off.
func (n *Node) accept(ln net.Listener) {
	defer n.wg.Done()
	for {
		nc := accept.Next(ln, n.done)
		if nc == nil {
			return
		}
		n.mu.Lock()
		select {
		case <-n.done: // closed meanwhile
			n.mu.Unlock()
			_ = nc.Close()
			return
		default:
		}
		n.records = append(n.records, connRecord{})
		c := newConn(n, len(n.records), nc)
		n.open[c] = struct{}{}
		n.mu.Unlock()
		n.wg.Add(1)
		go c.serve()
	}
}

// connRecord is what a closed connection leaves for Stats; its buffers and tables go.
type connRecord struct {
	streams, peak int32
}

func (n *Node) connClosed(c *conn) {
	total, peak := c.counts()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.records[c.id-1] = connRecord{streams: int32(min(total, math.MaxInt32)), peak: int32(min(peak, math.MaxInt32))}
	delete(n.open, c)
}

// latencyFor returns the next request's latency, counting it.
func (n *Node) latencyFor() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requests++
	if n.opts.slowAfter > 0 && n.requests > n.opts.slowAfter {
		return n.opts.slowLatency
	}
	return n.opts.latency
}

func (n *Node) streamStarted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inFlight++
	n.maxInFlight = max(n.maxInFlight, n.inFlight)
	n.sampleLocked()
}

// streamEnded records a stream's end: status > 0 answered, 0 cancelled, < 0 abandoned.
func (n *Node) streamEnded(status int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inFlight--
	switch {
	case status > 0:
		n.statuses[status]++
	case status == 0:
		n.cancelled++
	}
	n.sampleLocked()
}

func (n *Node) sampleLocked() {
	if len(n.samples) >= maxSamples {
		n.cut = true
		return
	}
	n.samples = append(n.samples, Sample{At: time.Since(n.start), InFlight: n.inFlight})
}

func (n *Node) countRefused() {
	n.mu.Lock()
	n.refused++
	n.mu.Unlock()
}
