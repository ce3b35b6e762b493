package h2node

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
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

// maxWindow is the largest flow-control window, 2^31-1 (RFC 9113 section 6.9.1).
const maxWindow = 1<<31 - 1

// initialWindow is a flow-control window's size until SETTINGS say otherwise.
const initialWindow = 65535

// conn is one client connection: its reader runs in serve, its answers in answerLoop
// (answer.go).
type conn struct {
	n      *Node
	id     int
	nc     net.Conn
	closed chan struct{} // closed by close
	once   sync.Once
	sched  *schedule // the answers to come

	wmu  sync.Mutex // guards fr's writes, bw, henc, hbuf and the send windows; taken before mu, never after
	fr   *http2.Framer
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer
	// Flow control of what the node sends (RFC 9113 section 6.9): the connection's window,
	// the client's SETTINGS_INITIAL_WINDOW_SIZE, and the answers whose DATA waits for
	// window, in the order they were due.
	sendWindow int64
	initWindow int64
	blocked    []*stream

	mu        sync.Mutex // guards the fields below
	streams   map[uint32]*stream
	lastID    uint32   // the highest stream id the client opened (RFC 9113 section 5.1.1)
	total     int      // streams accepted
	peak      int      // most streams open at once
	acked     uint32   // the stream limit in force, acknowledged or first advertised
	pending   []uint32 // stream limits sent and not yet acknowledged, oldest first
	throttled bool     // the APNs throttle lowered the limit to 1
}

// stream is one request. Its answer's fields are set before it is scheduled; started and
// ended are guarded by conn.mu, seq and index by the schedule's lock, window and pending by
// conn.wmu.
type stream struct {
	id      uint32
	window  int64  // what the node may still send on it (flow control)
	pending []byte // the answer's body while it waits for window; nil once sent or reset
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
		streams: make(map[uint32]*stream), acked: n.opts.maxStreams,
		sendWindow: initialWindow, initWindow: initialWindow}
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
	defer c.n.connClosed(c)
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
	c.bw = bufio.NewWriter(rw)
	// Frames are read through a buffer: a burst of requests is read in a few system calls, not
	// two (header, payload) per frame. Each frame is still processed only while not frozen.
	c.fr = http2.NewFramer(c.bw, bufio.NewReaderSize(rw, readBuffer))
	c.fr.SetMaxReadFrameSize(maxFrameSize)
	c.fr.MaxHeaderListSize = maxHeaderList
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.n.wg.Add(1)
	go c.answerLoop()
	err := c.write(func() error {
		c.mu.Lock()
		c.pending = append(c.pending, c.n.opts.maxStreams)
		c.mu.Unlock()
		return c.fr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.n.opts.maxStreams},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderList})
	})
	if err != nil {
		return
	}
	for {
		if !c.n.awaitThaw(c.closed) {
			return
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(c.silence()))
		f, err := c.fr.ReadFrame()
		var se http2.StreamError
		var ce http2.ConnectionError
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &se):
			if c.write(func() error { return c.fr.WriteRSTStream(se.StreamID, se.Code) }) != nil {
				return
			}
			continue
		case errors.As(err, &ce):
			c.goAway(http2.ErrCode(ce))
			return
		case errors.Is(err, http2.ErrFrameTooLarge):
			c.goAway(http2.ErrCodeFrameSize)
			return
		case errors.As(err, &ne) && ne.Timeout() && c.n.frozen():
			continue // the idle time counts again from the thaw
		case errors.As(err, &ne) && ne.Timeout():
			c.goAway(http2.ErrCodeNo) // idle: say so before closing, as net/http does
			return
		default:
			return // EOF, a broken connection or Close: the connection ends
		}
		// A frame that arrived during a freeze is held, unprocessed, until the thaw.
		if !c.n.awaitThaw(c.closed) {
			return
		}
		if err := c.handle(f); err != nil {
			if code, ok := err.(connError); ok {
				c.goAway(http2.ErrCode(code))
			}
			return
		}
	}
}

// silence is how long the client may send nothing: the idle timeout with no stream open, the
// longest answer time on top of it with streams open.
func (c *conn) silence() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.streams) == 0 {
		return c.n.opts.idleTimeout
	}
	return MaxDelay + c.n.opts.idleTimeout
}

// goAwayLinger is how long a connection that got a GOAWAY is still read, and at most 1 MB
// of it, before it closes.
const goAwayLinger = 500 * time.Millisecond

// handle processes one frame; an error ends the connection (a connError with a GOAWAY).
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
		return c.write(func() error {
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				if err := c.setInitialWindowLocked(int64(v)); err != nil {
					return err
				}
			}
			if err := c.fr.WriteSettingsAck(); err != nil {
				return err
			}
			return c.sendBlockedLocked()
		})
	case *http2.MetaHeadersFrame:
		return c.open(f)
	case *http2.DataFrame:
		if c.idle(f.StreamID) {
			return connError(http2.ErrCodeProtocol) // DATA on a stream never opened
		}
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
	case *http2.WindowUpdateFrame:
		if f.StreamID != 0 && c.idle(f.StreamID) {
			return connError(http2.ErrCodeProtocol)
		}
		return c.write(func() error { return c.windowUpdateLocked(f.StreamID, int64(f.Increment)) })
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		data := f.Data
		return c.write(func() error { return c.fr.WritePing(true, data) })
	case *http2.RSTStreamFrame:
		if c.idle(f.StreamID) {
			return connError(http2.ErrCodeProtocol) // RST_STREAM on a stream never opened
		}
		c.mu.Lock()
		st := c.streams[f.StreamID]
		c.mu.Unlock()
		c.dropPending(f.StreamID)
		if st != nil {
			c.end(st, 0)
		}
		return nil
	case *http2.GoAwayFrame:
		return io.EOF
	default: // PRIORITY, unknown frames: nothing to do
		return nil
	}
}

// idle reports whether stream id is idle: never opened by the client (RFC 9113 section 5.1).
func (c *conn) idle(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id > c.lastID
}

// open accepts or refuses a new stream.
func (c *conn) open(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	id := f.StreamID
	switch st, open := c.streams[id]; {
	case id%2 == 0:
		c.mu.Unlock()
		return connError(http2.ErrCodeProtocol) // a client opens odd streams only
	case open && f.StreamEnded():
		c.mu.Unlock()
		c.start(st) // the request's trailers: it is complete
		return nil
	case open:
		c.mu.Unlock()
		return connError(http2.ErrCodeProtocol) // trailers must end the stream
	case id <= c.lastID:
		c.mu.Unlock()
		return connError(http2.ErrCodeStreamClosed) // a closed stream, or ids going back
	}
	c.lastID = id
	if len(c.streams) >= int(c.limitLocked()) {
		c.mu.Unlock()
		c.n.countRefused()
		return c.write(func() error { return c.fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream) })
	}
	st := &stream{id: f.StreamID, index: -1, window: c.initWindow}
	st.status, st.latency, st.body = answer(f.PseudoValue("path"))
	if f.Truncated { // beyond SETTINGS_MAX_HEADER_LIST_SIZE: its fields were not kept
		st.status, st.latency, st.body = 431, 0, []byte("h2node: request header list too large\n")
	}
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
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.n.opts.writeTimeout)) // an error shows in the write
	if err := fn(); err != nil {
		return err
	}
	return c.bw.Flush()
}

// answer parses a request's path: its status, latency (-1: the node's) and body.
func answer(path string) (status int, latency time.Duration, body []byte) {
	status, latency = 200, -1
	short := func(s string) string { // an answer echoes at most this much of the request
		if len(s) > 64 {
			return s[:64] + "..."
		}
		return s
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return 400, 0, []byte("h2node: malformed path\n")
	}
	q := u.Query()
	if s := q.Get("status"); s != "" {
		code, err := strconv.Atoi(s)
		if err != nil || code < 200 || code > 599 {
			return 400, 0, fmt.Appendf(nil, "h2node: status must be a code from 200 to 599, got %q\n", short(s))
		}
		status = code
	}
	if s := q.Get("delay"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > MaxDelay {
			return 400, 0, fmt.Appendf(nil, "h2node: delay must be a duration from 0 to %v, got %q\n", MaxDelay, short(s))
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
