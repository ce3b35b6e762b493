package h2node

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// readBuffer is the size of a connection's read buffer.
const readBuffer = 16 << 10

// errClosed is what a write returns once its connection or the node closed.
var errClosed = errors.New("h2node: connection closed")

// conn is one client connection: its reader runs in serve, its answers in answerLoop
// (answer.go).
type conn struct {
	n      *Node
	id     int
	nc     net.Conn
	closed chan struct{} // closed by close
	once   sync.Once
	sched  *schedule // the answers to come

	wmu  sync.Mutex // guards fr's writes, bw, henc and hbuf; taken before mu, never after
	fr   *http2.Framer
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu        sync.Mutex // guards the fields below
	streams   map[uint32]*stream
	total     int      // streams accepted
	peak      int      // most streams open at once
	acked     uint32   // the stream limit the client acknowledged last; MaxUint32 before the first
	pending   []uint32 // stream limits sent and not yet acknowledged, oldest first
	throttled bool     // the APNs throttle lowered the limit to 1
}

// stream is one request. Its answer's fields are set before it is scheduled; started and
// ended are guarded by conn.mu, seq and index by the schedule's lock.
type stream struct {
	id      uint32
	latency time.Duration
	status  int
	body    []byte
	due     time.Time // when the answer is due: the request's end plus the latency
	started bool      // END_STREAM seen: the answer was scheduled
	ended   bool
	seq     uint64 // the order it was scheduled in
	index   int    // in the schedule's heap; -1 when not in it
}

func newConn(n *Node, id int, nc net.Conn) *conn {
	return &conn{n: n, id: id, nc: nc, closed: make(chan struct{}), sched: newSchedule(),
		streams: make(map[uint32]*stream), acked: math.MaxUint32}
}

// close closes the connection once and abandons its open streams.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.nc.Close() // the peer sees the connection end; there is nobody to report to
		c.mu.Lock()
		open := make([]*stream, 0, len(c.streams))
		for _, st := range c.streams {
			open = append(open, st)
		}
		c.mu.Unlock()
		for _, st := range open {
			c.end(st, -1)
		}
	})
}

func (c *conn) counts() (total, peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.peak
}

// serve reads the connection's frames until it ends.
func (c *conn) serve() {
	defer c.n.wg.Done()
	defer c.close()
	if !c.n.awaitThaw(c.closed) {
		return
	}
	var rw io.ReadWriter = c.nc
	if c.n.tlsCfg != nil {
		tc := tls.Server(c.nc, c.n.tlsCfg)
		ctx, cancel := context.WithTimeout(c.n.ctx, handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil || tc.ConnectionState().NegotiatedProtocol != http2.NextProtoTLS {
			return
		}
		rw = tc
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout)) // an error shows in the read below
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(rw, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	c.bw = bufio.NewWriter(rw)
	// Frames are read through a buffer: a burst of requests is read in a few system calls, not
	// two (header, payload) per frame. Each frame is still processed only while not frozen.
	c.fr = http2.NewFramer(c.bw, bufio.NewReaderSize(rw, readBuffer))
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.n.wg.Add(1)
	go c.answerLoop()
	if err := c.sendLimit(c.n.opts.maxStreams); err != nil {
		return
	}
	for {
		if !c.n.awaitThaw(c.closed) {
			return
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				if c.write(func() error { return c.fr.WriteRSTStream(se.StreamID, se.Code) }) != nil {
					return
				}
				continue
			}
			return // EOF, a connection error or Close: the connection ends
		}
		// A frame that arrived during a freeze is held, unprocessed, until the thaw.
		if !c.n.awaitThaw(c.closed) {
			return
		}
		if err := c.handle(f); err != nil {
			return
		}
	}
}

// handle processes one frame; an error ends the connection.
func (c *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			c.mu.Lock()
			if len(c.pending) > 0 {
				c.acked, c.pending = c.pending[0], c.pending[1:]
			}
			c.mu.Unlock()
			return nil
		}
		return c.write(c.fr.WriteSettingsAck)
	case *http2.MetaHeadersFrame:
		return c.open(f)
	case *http2.DataFrame:
		if n := f.Length; n > 0 {
			// Give the flow-control credit back at once, for the connection and the stream,
			// so that request bodies never stall a node that does not read them.
			err := c.write(func() error {
				if err := c.fr.WriteWindowUpdate(0, n); err != nil {
					return err
				}
				if f.StreamEnded() {
					return nil
				}
				return c.fr.WriteWindowUpdate(f.StreamID, n)
			})
			if err != nil {
				return err
			}
		}
		if f.StreamEnded() {
			c.mu.Lock()
			st := c.streams[f.StreamID]
			c.mu.Unlock()
			if st != nil {
				c.start(st)
			}
		}
		return nil
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		data := f.Data
		return c.write(func() error { return c.fr.WritePing(true, data) })
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		st := c.streams[f.StreamID]
		c.mu.Unlock()
		if st != nil {
			c.end(st, 0)
		}
		return nil
	case *http2.GoAwayFrame:
		return io.EOF
	default: // WINDOW_UPDATE, PRIORITY, unknown frames: nothing to do
		return nil
	}
}

// open accepts or refuses a new stream.
func (c *conn) open(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	if _, dup := c.streams[f.StreamID]; dup {
		c.mu.Unlock()
		return nil // trailers of an open stream: ignored
	}
	if len(c.streams) >= int(c.limitLocked()) {
		c.mu.Unlock()
		c.n.countRefused()
		return c.write(func() error { return c.fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream) })
	}
	st := &stream{id: f.StreamID, index: -1}
	st.status, st.latency, st.body = answer(f.PseudoValue("path"))
	c.streams[f.StreamID] = st
	c.total++
	c.peak = max(c.peak, len(c.streams))
	c.mu.Unlock()
	c.n.streamStarted()
	if f.StreamEnded() {
		c.start(st)
	}
	return nil
}

// limitLocked is the stream limit in force: the last one acknowledged or, while a SETTINGS
// frame awaits its ACK, the larger of it and the pending ones (a lowered limit applies only
// once the client knows it).
func (c *conn) limitLocked() uint32 {
	l := c.acked
	for _, p := range c.pending {
		l = max(l, p)
	}
	return l
}

// start schedules the stream's answer once its request is complete: due after its latency,
// counted from now.
func (c *conn) start(st *stream) {
	now := time.Now()
	c.mu.Lock()
	if st.started || st.ended {
		c.mu.Unlock()
		return
	}
	st.started = true
	c.mu.Unlock()
	lat := c.n.latencyFor()
	if st.latency < 0 { // no delay= in the request
		st.latency = lat
	}
	st.due = now.Add(st.latency)
	c.sched.add(st)
}

// throttle applies the APNs rule after an answer: a 400 lowers the connection's stream limit
// to 1, the next success restores it. It returns the new limit to send, 0 for none.
func (c *conn) throttle(status int) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case status == 400 && !c.throttled:
		c.throttled = true
		return 1
	case status < 300 && c.throttled:
		c.throttled = false
		return c.n.opts.maxStreams
	}
	return 0
}

// sendLimit sends a SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS = limit.
func (c *conn) sendLimit(limit uint32) error {
	return c.write(func() error { return c.writeLimitLocked(limit) })
}

// writeLimitLocked writes a SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS = limit and
// awaits its ACK. The write lock must be held.
func (c *conn) writeLimitLocked(limit uint32) error {
	c.mu.Lock()
	c.pending = append(c.pending, limit)
	c.mu.Unlock()
	return c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: limit})
}

// end ends st once: status > 0 answered, 0 reset by the client, -1 abandoned. It reports
// whether this call ended it.
func (c *conn) end(st *stream, status int) bool {
	c.mu.Lock()
	if st.ended {
		c.mu.Unlock()
		return false
	}
	st.ended = true
	delete(c.streams, st.id)
	c.mu.Unlock()
	if status == 0 {
		c.sched.remove(st)
	}
	c.n.streamEnded(status)
	return true
}

// write runs fn, which writes frames, under the write lock and flushes them; while the node
// is frozen it waits. It fails once the connection closed.
func (c *conn) write(fn func() error) error {
	if !c.n.awaitThaw(c.closed) {
		return errClosed
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return errClosed
	default:
	}
	if err := fn(); err != nil {
		return err
	}
	return c.bw.Flush()
}

// answer parses a request's path: its status, latency (-1: the node's) and body.
func answer(path string) (status int, latency time.Duration, body []byte) {
	status, latency = 200, -1
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return 400, 0, []byte("h2node: malformed path\n")
	}
	q := u.Query()
	if s := q.Get("status"); s != "" {
		code, err := strconv.Atoi(s)
		if err != nil || code < 200 || code > 599 {
			return 400, 0, fmt.Appendf(nil, "h2node: status must be a code from 200 to 599, got %q\n", s)
		}
		status = code
	}
	if s := q.Get("delay"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > MaxDelay {
			return 400, 0, fmt.Appendf(nil, "h2node: delay must be a duration from 0 to %v, got %q\n", MaxDelay, s)
		}
		latency = d
	}
	switch status {
	case 200:
		body = []byte("ok\n")
	case 204, 304:
	case 400:
		body = []byte(`{"reason":"BadDeviceToken"}`)
	default:
		body = fmt.Appendf(nil, "status %d\n", status)
	}
	return status, latency, body
}
