package grpcsrv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The front passes every HTTP/2 frame between the client and grpc-go's server (an in-process
// pipe), recording what grpc-go does not tell a handler (grpc-timeout as written, RST_STREAM,
// GOAWAY, connections) and doing what it cannot be asked per call (refuse a stream, GOAWAY,
// freeze). Headers are re-encoded, as HPACK keeps state per direction; other frames keep their
// bytes. A connection without HTTP/2's preface is HTTP/1.1: /stats.

// The front's bounds: the frame size it reads (SETTINGS_MAX_FRAME_SIZE's initial value, which
// grpc-go advertises), a header list, a message, and the time a client has to send the preface.
const (
	maxFrame       = 16 << 10
	maxHeaderList  = 32 << 10
	maxMessage     = 1 << 20
	prefaceTimeout = 10 * time.Second
)

type frontConn struct {
	s       *Server
	n       int // from 1
	client  net.Conn
	backend net.Conn // our end of the pipe to grpc-go

	wmu sync.Mutex // guards writes to client
	cw  *http2.Framer

	mu       sync.Mutex       // guards the fields below
	open     map[uint32]*Call // streams passed to the server and not yet ended
	lastSeen uint32           // the highest stream the client opened
	lastSent uint32           // the highest stream passed to the server
	frozen   bool
}

func (s *Server) serveConn(c net.Conn) {
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(s.prefaceTimeout))
	if ok, err := hasPreface(br); !ok {
		if err == nil {
			c.SetReadDeadline(time.Time{})
			s.stats.serveHTTP(&peekedConn{Conn: c, r: br})
		} else {
			c.Close()
		}
		return
	}
	c.SetReadDeadline(time.Time{})
	br.Discard(len(http2.ClientPreface))
	ours, theirs := net.Pipe()
	if !s.handOver(theirs) {
		c.Close()
		ours.Close()
		return
	}
	fc := &frontConn{s: s, n: s.stats.connOpened(), client: c, backend: ours, cw: http2.NewFramer(c, nil),
		open: map[uint32]*Call{}}
	s.fronted(c, fc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fc.fromServer()
		c.Close() // the server went: end the client's read too
	}()
	fc.fromClient(br)
	c.Close()
	ours.Close()
	<-done
	s.stats.connClosed()
}

// hasPreface reads until r's first bytes are HTTP/2's preface (true) or cannot be (false, and
// the error that ended the read, if one did), so that a shorter HTTP/1.1 request is answered.
func hasPreface(r *bufio.Reader) (bool, error) {
	for n := 1; n <= len(http2.ClientPreface); n++ {
		b, err := r.Peek(n)
		if err != nil {
			return false, err
		}
		if b[n-1] != http2.ClientPreface[n-1] {
			return false, nil
		}
	}
	return true, nil
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

func (fc *frontConn) fromClient(r io.Reader) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	fr := http2.NewFramer(nil, br)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = maxHeaderList
	fr.SetMaxReadFrameSize(maxFrame)
	out := http2.NewFramer(fc.backend, nil)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	if _, err := io.WriteString(fc.backend, http2.ClientPreface); err != nil {
		return
	}
	for {
		var hdr [9]byte // the next frame's header: the Framer reads no further ahead
		if next, err := br.Peek(len(hdr)); err == nil {
			copy(hdr[:], next)
		}
		f, err := fr.ReadFrame()
		if err != nil {
			if fc.readError(streamLevel(err, hdr), out) {
				continue
			}
			return
		}
		id := f.Header().StreamID
		fc.mu.Lock()
		_, passed := fc.open[id]
		frozen, dropped := fc.frozen, id != 0 && !passed
		fc.mu.Unlock()
		if frozen {
			continue // to see the client close
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				err = out.WriteSettingsAck()
				break
			}
			var ss []http2.Setting
			f.ForeachSetting(func(s http2.Setting) error { ss = append(ss, s); return nil })
			err = out.WriteSettings(ss...)
		case *http2.MetaHeadersFrame:
			if f.HasPriority() && f.Priority.StreamDep == id { // RFC 9113 5.3.1
				if !fc.readError(http2.StreamError{StreamID: id, Code: http2.ErrCodeProtocol}, out) {
					return
				}
				break
			}
			err = fc.headers(f, out, &hbuf, enc)
		case *http2.PriorityFrame:
			if f.StreamDep == id && !fc.readError(http2.StreamError{StreamID: id, Code: http2.ErrCodeProtocol}, out) {
				return
			}
		case *http2.DataFrame:
			if dropped {
				err = fc.giveBack(f.Length)
				break
			}
			err = out.WriteData(id, f.StreamEnded(), f.Data())
		case *http2.WindowUpdateFrame:
			if !dropped {
				err = out.WriteWindowUpdate(id, f.Increment)
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fc.s.stats.ping()
			}
			err = out.WritePing(f.IsAck(), f.Data)
		case *http2.RSTStreamFrame:
			fc.rst(id, f.ErrCode, true)
			if !dropped {
				err = out.WriteRSTStream(id, f.ErrCode)
			}
			fc.end(id)
		case *http2.GoAwayFrame:
			err = out.WriteGoAway(f.LastStreamID, f.ErrCode, f.DebugData())
		}
		if err != nil {
			return
		}
	}
}

// readError answers a frame the client sent wrong: a stream error resets that stream (true: read
// on), a connection error sends GOAWAY with its code (false: close).
func (fc *frontConn) readError(err error, out *http2.Framer) bool {
	var se http2.StreamError
	if errors.As(err, &se) {
		fc.mu.Lock()
		_, passed := fc.open[se.StreamID]
		fc.mu.Unlock()
		if passed {
			out.WriteRSTStream(se.StreamID, http2.ErrCodeCancel)
			fc.end(se.StreamID)
		}
		return fc.write(func(w *http2.Framer) error { return w.WriteRSTStream(se.StreamID, se.Code) }) == nil
	}
	code, ok := http2.ErrCodeProtocol, true
	var ce http2.ConnectionError
	switch {
	case errors.Is(err, http2.ErrFrameTooLarge):
		code = http2.ErrCodeFrameSize
	case errors.As(err, &ce):
		code = http2.ErrCode(ce)
	default:
		_, ok = err.(interface{ Timeout() bool })
		ok = !ok && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed)
	}
	if ok {
		fc.mu.Lock()
		last := fc.lastSeen
		fc.mu.Unlock()
		fc.write(func(w *http2.Framer) error { return w.WriteGoAway(last, code, nil) })
	}
	return false
}

// streamLevel is the stream error RFC 9113 6.3 asks for a PRIORITY frame of a length other
// than 5, which x/net's Framer reports as a connection error once it read the frame whole.
func streamLevel(err error, hdr [9]byte) error {
	var ce http2.ConnectionError
	id := binary.BigEndian.Uint32(hdr[5:]) & (1<<31 - 1)
	if http2.FrameType(hdr[3]) == http2.FramePriority && id != 0 && errors.As(err, &ce) && http2.ErrCode(ce) == http2.ErrCodeFrameSize {
		return http2.StreamError{StreamID: id, Code: http2.ErrCodeFrameSize}
	}
	return err
}

// end forgets a stream the server ended or either side reset: the client's frames on it that
// follow are not passed (DATA's connection window is given back).
func (fc *frontConn) end(id uint32) {
	fc.mu.Lock()
	delete(fc.open, id)
	fc.mu.Unlock()
}

// headers records a new stream and passes it on with the front's metadata, or does what its
// fault says instead.
func (fc *frontConn) headers(f *http2.MetaHeadersFrame, out *http2.Framer, hbuf *bytes.Buffer, enc *hpack.Encoder) error {
	id := f.StreamID
	fc.mu.Lock()
	_, passed := fc.open[id]
	fc.lastSeen = max(fc.lastSeen, id)
	fc.mu.Unlock()
	if passed || f.Truncated {
		return fc.refuseHeaders(f, passed)
	}
	var path, timeout, fault, call string
	for _, h := range f.Fields {
		switch h.Name {
		case ":path":
			path = h.Value
		case "grpc-timeout":
			timeout = h.Value
		case FaultHeader:
			fault = h.Value
		case CallHeader:
			call = h.Value
		}
	}
	parsed, _ := ParseFault(fault, fc.s.maxDuration) // the handler reports a bad fault
	seen := 1
	if len(call) <= MaxCallLen { // the handler refuses a longer id
		seen = fc.s.stats.streamSeen(call)
	}
	c := fc.s.stats.newCall(path, call, fault, timeout, fc.n, id)
	switch {
	case parsed.Freeze:
		fc.mu.Lock()
		fc.frozen = true
		fc.mu.Unlock()
		fc.s.stats.note(c, func(c *Call) { c.Front = "froze the connection" })
		return nil
	case seen <= parsed.Refuse:
		fc.s.stats.refused(c)
		return fc.write(func(w *http2.Framer) error { return w.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
	case seen <= parsed.GoAway:
		fc.mu.Lock()
		last := fc.lastSent
		fc.mu.Unlock()
		fc.s.stats.goAway(c, last)
		return fc.write(func(w *http2.Framer) error { return w.WriteGoAway(last, http2.ErrCodeNo, nil) })
	}
	hbuf.Reset()
	for _, h := range f.Fields {
		switch h.Name {
		case timeoutHeader, connHeader, streamHeader:
			continue
		}
		if err := enc.WriteField(h); err != nil {
			return err
		}
	}
	extra := []hpack.HeaderField{{Name: connHeader, Value: strconv.Itoa(fc.n)}, {Name: streamHeader, Value: strconv.FormatUint(uint64(id), 10)}}
	if timeout != "" {
		extra = append(extra, hpack.HeaderField{Name: timeoutHeader, Value: timeout})
	}
	for _, h := range extra {
		if err := enc.WriteField(h); err != nil {
			return err
		}
	}
	fc.mu.Lock()
	fc.lastSent = max(fc.lastSent, id)
	fc.open[id] = c
	fc.mu.Unlock()
	block := hbuf.Bytes()
	const chunk = 16384 // SETTINGS_MAX_FRAME_SIZE's initial value
	first := block[:min(len(block), chunk)]
	if err := out.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: f.StreamEnded(), EndHeaders: len(block) <= chunk}); err != nil {
		return err
	}
	for rest := block[len(first):]; len(rest) > 0; {
		n := min(len(rest), chunk)
		if err := out.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// refuseHeaders answers a header block the front does not pass: a second one on a stream (the
// server gets no trailers from a gRPC client) or one over maxHeaderList.
func (fc *frontConn) refuseHeaders(f *http2.MetaHeadersFrame, passed bool) error {
	if passed && !f.Truncated {
		return nil
	}
	c := fc.s.stats.newCall("", "", "", "", fc.n, f.StreamID)
	fc.s.stats.note(c, func(c *Call) {
		c.Front = "metadata over " + itoa(maxHeaderList>>10) + " KiB: RST_STREAM ENHANCE_YOUR_CALM"
	})
	return fc.write(func(w *http2.Framer) error { return w.WriteRSTStream(f.StreamID, http2.ErrCodeEnhanceYourCalm) })
}

// giveBack returns the connection window a dropped stream's data took, which the server never
// saw.
func (fc *frontConn) giveBack(n uint32) error {
	if n == 0 {
		return nil
	}
	return fc.write(func(w *http2.Framer) error { return w.WriteWindowUpdate(0, n) })
}

func (fc *frontConn) write(f func(*http2.Framer) error) error {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	return f(fc.cw)
}

func (fc *frontConn) rst(id uint32, code http2.ErrCode, fromClient bool) {
	fc.mu.Lock()
	c := fc.open[id]
	fc.mu.Unlock()
	fc.s.stats.rst(c, code.String(), fromClient)
}

// fromServer copies the server's frames to the client, noting RST_STREAM and GOAWAY; a frozen
// connection passes nothing.
func (fc *frontConn) fromServer() {
	var hdr [9]byte
	buf := make([]byte, 0, 1<<14)
	for {
		if _, err := io.ReadFull(fc.backend, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if cap(buf) < 9+n {
			buf = make([]byte, 0, 9+n)
		}
		frame := append(buf[:0], hdr[:]...)
		frame = frame[:9+n]
		if _, err := io.ReadFull(fc.backend, frame[9:]); err != nil {
			return
		}
		typ, id := http2.FrameType(hdr[3]), binary.BigEndian.Uint32(hdr[5:9])&(1<<31-1)
		switch {
		case typ == http2.FrameRSTStream && n == 4:
			fc.rst(id, http2.ErrCode(binary.BigEndian.Uint32(frame[9:13])), false)
			fc.end(id)
		case (typ == http2.FrameHeaders || typ == http2.FrameData) && http2.Flags(hdr[4]).Has(http2.FlagDataEndStream):
			fc.end(id)
		case typ == http2.FrameGoAway && tooManyPings(frame[9:]):
			fc.s.stats.tooManyPings()
		}
		fc.mu.Lock()
		frozen := fc.frozen
		fc.mu.Unlock()
		if frozen {
			continue
		}
		fc.wmu.Lock()
		_, err := fc.client.Write(frame)
		fc.wmu.Unlock()
		if err != nil {
			return
		}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "front" }

// handOver gives grpc-go its end of a pipe; false once closing.
func (s *Server) handOver(c net.Conn) bool {
	select {
	case s.pipes.conns <- c:
		return true
	case <-s.pipes.closed:
		return false
	case <-time.After(5 * time.Second):
		return false
	}
}

// tooManyPings reports whether a GOAWAY's payload is the keepalive policy's:
// ENHANCE_YOUR_CALM with the debug data "too_many_pings".
func tooManyPings(payload []byte) bool {
	return len(payload) >= 8 && http2.ErrCode(binary.BigEndian.Uint32(payload[4:8])) == http2.ErrCodeEnhanceYourCalm &&
		string(payload[8:]) == "too_many_pings"
}
