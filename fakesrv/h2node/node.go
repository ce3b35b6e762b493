// Package h2node is an HTTP/2 "node": one server of a service that several IP addresses
// answer for, as APNs's api.push.apple.com is. labrun starts a few on loopback addresses
// (127.0.0.2, 127.0.0.3, ... : any address of 127.0.0.0/8 works on Linux without setup) and
// measures how an HTTP/2 client spreads its streams over them.
//
// A node speaks HTTP/2 itself, frame by frame, with golang.org/x/net/http2's Framer and
// hpack, rather than through net/http's server: it has to do what a real server does not
// let a handler do. It advertises a chosen SETTINGS_MAX_CONCURRENT_STREAMS and lowers it
// while running (the APNs throttle); it freezes (reads and writes nothing while the kernel
// keeps the connections open, a hung peer); and it counts connections, streams per
// connection and streams in flight over time, so that a row can say how a burst was spread
// or that it was serialized.
//
// It serves TLS (ALPN h2, a certificate from an in-memory CA) or h2c with prior knowledge.
// A Cluster is several nodes on one port with a control API (labrun serve --h2 and --h2c).
//
// A node is safe to leave running: it bounds header lists, frames, idle connections and
// writes in size or time, keeps a few bytes of a connection once it closed, waits out an
// accept error such as EMFILE, and ends a connection that breaks RFC 9113's rules for stream
// ids and flow control with a GOAWAY (docs/serve.md lists the bounds).
//
// # Requests
//
// Every request is a stream; its path is not routed. Two query keys change the answer:
//
//	status=CODE   answer CODE (100 < CODE < 600) instead of 200; a 400 carries
//	              {"reason":"BadDeviceToken"}, as APNs answers a bad device token
//	delay=DUR     answer after DUR (a Go duration, at most MaxDelay) instead of the node's
//	              latency
//
// so "/3/device/TOKEN?status=400" stands for a rejected notification. A stream is answered
// with a HEADERS and a DATA frame after its latency, counted from the moment its request is
// complete (END_STREAM). Its response carries "x-h2node-conn", the connection's number.
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

// DefaultMaxStreams is the SETTINGS_MAX_CONCURRENT_STREAMS a node advertises unless told
// otherwise: 100, the value RFC 9113 recommends as a minimum and Go's server default.
const DefaultMaxStreams = 100

// MaxDelay caps every latency and every delay= of a request: a safety net against a request
// that holds a goroutine for longer than any experiment runs.
const MaxDelay = 10 * time.Minute

// maxSamples bounds the in-flight timeline; Timeline reports when it was cut.
const maxSamples = 1 << 16

// handshakeTimeout bounds a TLS handshake or a client preface that does not come.
const handshakeTimeout = 10 * time.Second

// DefaultIdleTimeout is how long a node keeps a connection that carries no stream and sends
// nothing, unless WithIdleTimeout says otherwise; it then sends GOAWAY and closes it.
const DefaultIdleTimeout = 2 * time.Minute

// writeTimeout bounds every write of a connection: a client that stops reading loses its
// connection instead of pinning the answers queued for it.
const writeTimeout = 10 * time.Second

// maxHeaderList is the SETTINGS_MAX_HEADER_LIST_SIZE a node advertises and enforces: a
// request head beyond it is answered 431, and one far beyond ends the connection, without
// the node holding more than this of it (net/http's server allows 1 MB; requests to a
// node carry a path and a few headers).
const maxHeaderList = 64 << 10

// maxFrameSize is the largest frame a node reads: SETTINGS_MAX_FRAME_SIZE's initial value,
// which the node never raises.
const maxFrameSize = 16 << 10

// Node is an HTTP/2 server on a loopback address. Create it with New, stop it with Close. Its
// methods are safe for concurrent use.
type Node struct {
	// Addr is the address the node listens on, "127.0.0.2:PORT".
	Addr string
	// URL is "https://Addr" with TLS, "http://Addr" for h2c, without a trailing slash.
	URL string

	opts     options
	ln       net.Listener
	tlsCfg   *tls.Config
	client   *tls.Config
	start    time.Time
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	done     <-chan struct{} // ctx.Done()
	wg       sync.WaitGroup
	closeErr error
	once     sync.Once

	mu          sync.Mutex         // guards every field below
	records     []connRecord       // every connection's counts, in accept order; conn.id is the index + 1
	open        map[*conn]struct{} // the connections open now
	requests    int                // requests received (for WithSlowAfter), refused ones excluded
	statuses    map[int]int
	refused     int
	cancelled   int
	inFlight    int
	maxInFlight int
	samples     []Sample
	cut         bool
	thaw        chan struct{} // closed while the node is not frozen
}

// New starts a node listening on the address given with WithAddr (default 127.0.0.1, a free
// port) and serving in the background.
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
			_ = ln.Close() // nothing was served on it
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

// ClientTLS returns a client configuration that trusts the node's certificate (from WithTLS),
// or nil for h2c. Each call returns a new value.
func (n *Node) ClientTLS() *tls.Config {
	if n.client == nil {
		return nil
	}
	return n.client.Clone()
}

// Close stops the node: it closes the listener and every connection, ends every stream
// without an answer, and waits for all of its goroutines.
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

// Freeze makes the node a hung peer: from now on it reads and writes nothing on any
// connection, old or new, and answers nothing, while the kernel keeps the connections open
// and acknowledges what arrives. Streams keep their timers; their answers wait for Thaw.
func (n *Node) Freeze() {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.thaw:
		n.thaw = make(chan struct{})
	default: // already frozen
	}
}

// Thaw ends a Freeze: reading and writing resume where they stopped.
func (n *Node) Thaw() {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.thaw:
	default:
		close(n.thaw)
	}
}

// awaitThaw waits while the node is frozen. It returns false when stop or the node closed.
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

// frozen reports whether the node is frozen now.
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

// accept accepts ln's connections until the node closes. An accept error other than the
// listener's closing (EMFILE, ENFILE, ENOBUFS, a connection aborted) is waited out with a
// back-off, never taken for the end: a node that stopped accepting for good after one fd
// shortage would look healthy in its Stats and answer nobody.
func (n *Node) accept(ln net.Listener) {
	defer n.wg.Done()
	for {
		nc := accept.Next(ln, n.done)
		if nc == nil {
			return
		}
		n.mu.Lock()
		select {
		case <-n.done: // closed meanwhile: Close no longer sees new connections
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

// connRecord is what a node keeps of a connection for its Stats once it closed: its whole
// state (buffers, Framer, hpack tables, some 30 KB) goes with it.
type connRecord struct {
	streams, peak int32 // streams carried; most in flight at once
}

// connClosed records c's final counts and forgets c.
func (n *Node) connClosed(c *conn) {
	total, peak := c.counts()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.records[c.id-1] = connRecord{streams: int32(min(total, math.MaxInt32)), peak: int32(min(peak, math.MaxInt32))}
	delete(n.open, c)
}

// latencyFor returns how long the next request takes, counting it.
func (n *Node) latencyFor() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requests++
	if n.opts.slowAfter > 0 && n.requests > n.opts.slowAfter {
		return n.opts.slowLatency
	}
	return n.opts.latency
}

// streamStarted and streamEnded keep the in-flight count and its timeline.
func (n *Node) streamStarted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inFlight++
	n.maxInFlight = max(n.maxInFlight, n.inFlight)
	n.sampleLocked()
}

// streamEnded records how a stream ended: status > 0 answered, status 0 cancelled by the
// client, status < 0 abandoned (its connection closed).
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
