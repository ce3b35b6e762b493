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

const readBuffer = 16 << 10

var errClosed = errors.New("h2node: connection closed")

// maxWindow is the largest flow-control window (RFC 9113 section 6.9.1).
const maxWindow = 1<<31 - 1

const initialWindow = 65535

// conn is one client connection: read in serve, answered in answerLoop.
type conn struct {
	n      *Node
	id     int
	nc     net.Conn
	closed chan struct{}
	once   sync.Once
	sched  *schedule

	wmu  sync.Mutex // guards writes and send windows; taken before mu, never after
	fr   *http2.Framer
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer
	// Flow control of what the node sends (RFC 9113 section 6.9).
	sendWindow int64
	initWindow int64
	blocked    []*stream

	mu        sync.Mutex // guards the fields below
	streams   map[uint32]*stream
	lastID    uint32 // highest stream id opened
	total     int
	peak      int
	acked     uint32   // the limit in force
	pending   []uint32 // limits sent, not yet acknowledged
	throttled bool
}

// stream is one request; started and ended are guarded by conn.mu, window and pending by
// conn.wmu.
type stream struct {
	id      uint32
	window  int64
	pending []byte
	latency time.Duration
	status  int
	body    []byte
	due     time.Time
	started bool // END_STREAM seen
	ended   bool
	seq     uint64
	index   int
}

func newConn(n *Node, id int, nc net.Conn) *conn {
	return &conn{n: n, id: id, nc: nc, closed: make(chan struct{}), sched: newSchedule(),
		streams: make(map[uint32]*stream), acked: n.opts.maxStreams,
		sendWindow: initialWindow, initWindow: initialWindow}
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.nc.Close()
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
	_ = c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(rw, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c.bw = bufio.NewWriter(rw)
	// Buffered: a burst is read in a few system calls.
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
			continue // idle time counts again from the thaw
		case errors.As(err, &ne) && ne.Timeout():
			c.goAway(http2.ErrCodeNo) // idle: GOAWAY before closing, as net/http does
			return
		default:
			return
		}
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

// silence is how long the client may send nothing.
func (c *conn) silence() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.streams) == 0 {
		return c.n.opts.idleTimeout
	}
	return MaxDelay + c.n.opts.idleTimeout
}

// goAwayLinger is how long, and up to 1 MB, a connection is still read after a GOAWAY.
const goAwayLinger = 500 * time.Millisecond

// handle processes one frame; an error (a connError) ends the connection with a GOAWAY.
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
			return connError(http2.ErrCodeProtocol)
		}
		if n := f.Length; n > 0 {
			// Credit back at once, so request bodies never stall a node that does not read them.
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
			return connError(http2.ErrCodeProtocol)
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
	default:
		return nil
	}
}

// idle reports whether the client never opened stream id (RFC 9113 section 5.1).
func (c *conn) idle(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return id > c.lastID
}

func (c *conn) open(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	id := f.StreamID
	switch st, open := c.streams[id]; {
	case id%2 == 0:
		c.mu.Unlock()
		return connError(http2.ErrCodeProtocol)
	case open && f.StreamEnded():
		c.mu.Unlock()
		c.start(st) // trailers: the request is complete
		return nil
	case open:
		c.mu.Unlock()
		return connError(http2.ErrCodeProtocol)
	case id <= c.lastID:
		c.mu.Unlock()
		return connError(http2.ErrCodeStreamClosed)
	}
	c.lastID = id
	if len(c.streams) >= int(c.limitLocked()) {
		c.mu.Unlock()
		c.n.countRefused()
		return c.write(func() error { return c.fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream) })
	}
	st := &stream{id: f.StreamID, index: -1, window: c.initWindow}
	st.status, st.latency, st.body = answer(f.PseudoValue("path"))
	if f.Truncated { // beyond SETTINGS_MAX_HEADER_LIST_SIZE
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

// start schedules st's answer, due its latency from now.
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
	if st.latency < 0 {
		st.latency = lat
	}
	st.due = now.Add(st.latency)
	c.sched.add(st)
}

// end ends st once (status > 0 answered, 0 reset, -1 abandoned); false if already ended.
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

// write runs fn under the write lock and flushes, waiting while frozen; it fails once closed.
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
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.n.opts.writeTimeout))
	if err := fn(); err != nil {
		return err
	}
	return c.bw.Flush()
}

// answer parses a request path: status, latency (-1: the node's) and body.
func answer(path string) (status int, latency time.Duration, body []byte) {
	status, latency = 200, -1
	short := func(s string) string {
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
