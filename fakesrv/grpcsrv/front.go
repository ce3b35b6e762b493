package grpcsrv

import (
	"bufio"
	"bytes"
	"encoding/binary"
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

type frontConn struct {
	s       *Server
	n       int // from 1
	client  net.Conn
	backend net.Conn // our end of the pipe to grpc-go

	wmu sync.Mutex // guards writes to client
	cw  *http2.Framer

	mu       sync.Mutex       // guards the fields below
	dropped  map[uint32]bool  // streams the handler never sees
	streams  map[uint32]*Call // by stream id
	lastSent uint32
	frozen   bool
}

func (s *Server) serveConn(c net.Conn) {
	br := bufio.NewReader(c)
	pre, err := br.Peek(len(http2.ClientPreface))
	if err != nil || string(pre) != http2.ClientPreface {
		s.stats.serveHTTP(&peekedConn{Conn: c, r: br})
		return
	}
	br.Discard(len(pre))
	ours, theirs := net.Pipe()
	if !s.handOver(theirs) {
		c.Close()
		ours.Close()
		return
	}
	fc := &frontConn{s: s, n: s.stats.connOpened(), client: c, backend: ours, cw: http2.NewFramer(c, nil),
		dropped: map[uint32]bool{}, streams: map[uint32]*Call{}}
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

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

func (fc *frontConn) fromClient(r io.Reader) {
	fr := http2.NewFramer(nil, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = 1 << 20
	fr.SetMaxReadFrameSize(1 << 24)
	out := http2.NewFramer(fc.backend, nil)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	if _, err := io.WriteString(fc.backend, http2.ClientPreface); err != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		id := f.Header().StreamID
		fc.mu.Lock()
		frozen, dropped := fc.frozen, fc.dropped[id]
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
			err = fc.headers(f, out, &hbuf, enc)
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
			err = out.WritePing(f.IsAck(), f.Data)
		case *http2.RSTStreamFrame:
			fc.rst(id, f.ErrCode, true)
			if !dropped {
				err = out.WriteRSTStream(id, f.ErrCode)
			}
		case *http2.GoAwayFrame:
			err = out.WriteGoAway(f.LastStreamID, f.ErrCode, f.DebugData())
		}
		if err != nil {
			return
		}
	}
}

// headers records a new stream and passes it on with the front's metadata, or does what its
// fault says instead.
func (fc *frontConn) headers(f *http2.MetaHeadersFrame, out *http2.Framer, hbuf *bytes.Buffer, enc *hpack.Encoder) error {
	id := f.StreamID
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
	seen := fc.s.stats.streamSeen(call)
	c := fc.s.stats.newCall(path, call, fault, timeout, fc.n, id)
	fc.mu.Lock()
	fc.streams[id] = c
	fc.mu.Unlock()
	switch {
	case parsed.Freeze:
		fc.mu.Lock()
		fc.frozen = true
		fc.mu.Unlock()
		fc.s.stats.note(c, func(c *Call) { c.Front = "froze the connection" })
		return nil
	case seen <= parsed.Refuse:
		fc.drop(id)
		fc.s.stats.refused(c)
		return fc.write(func(w *http2.Framer) error { return w.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
	case seen <= parsed.GoAway:
		fc.drop(id)
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

func (fc *frontConn) drop(id uint32) {
	fc.mu.Lock()
	fc.dropped[id] = true
	fc.mu.Unlock()
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
	c := fc.streams[id]
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
		if typ == http2.FrameRSTStream && n == 4 {
			fc.rst(id, http2.ErrCode(binary.BigEndian.Uint32(frame[9:13])), false)
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
