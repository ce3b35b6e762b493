package grpcsrv

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestFrameErrorsByLevel: what RFC 9113 makes a stream error resets that stream and the
// connection serves on (a PING is answered); a connection error is a GOAWAY with its code,
// then the close. Before, a PRIORITY frame of 4 bytes closed the connection with GOAWAY
// FRAME_SIZE_ERROR, and a stream made to depend on itself was passed on.
func TestFrameErrorsByLevel(t *testing.T) {
	call := func(dep uint32) http2.HeadersFrameParam {
		var hbuf bytes.Buffer
		enc := hpack.NewEncoder(&hbuf)
		for _, h := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", MethodCall}, {":authority", "x"}, {"content-type", "application/grpc"}} {
			enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
		}
		return http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: true,
			Priority: http2.PriorityParam{StreamDep: dep, Weight: 1}}
	}
	tests := []struct {
		name string
		send func(fr *http2.Framer)
		rst  http2.ErrCode // on stream 1; 0: GOAWAY goAway then the close
		away http2.ErrCode
	}{
		{"PRIORITY of 4 bytes (6.3)", func(fr *http2.Framer) { fr.WriteRawFrame(http2.FramePriority, 0, 1, []byte{0, 0, 0, 3}) }, http2.ErrCodeFrameSize, 0},
		{"PRIORITY on itself (5.3.1)", func(fr *http2.Framer) { fr.WritePriority(1, http2.PriorityParam{StreamDep: 1, Weight: 1}) }, http2.ErrCodeProtocol, 0},
		{"HEADERS on itself (5.3.1)", func(fr *http2.Framer) { fr.WriteHeaders(call(1)) }, http2.ErrCodeProtocol, 0},
		{"WINDOW_UPDATE of 0 (6.9)", func(fr *http2.Framer) { fr.WriteWindowUpdate(1, 0) }, http2.ErrCodeProtocol, 0},
		{"PRIORITY on stream 0 (6.3)", func(fr *http2.Framer) { fr.WriteRawFrame(http2.FramePriority, 0, 0, []byte{0, 0, 0, 3, 1}) }, 0, http2.ErrCodeProtocol},
		{"DATA on stream 0 (6.1)", func(fr *http2.Framer) { fr.WriteData(0, false, []byte("x")) }, 0, http2.ErrCodeProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := start(t)
			c := dialRaw(t, s)
			c.fr.AllowIllegalWrites = true
			tt.send(c.fr)
			c.fr.WritePing(false, [8]byte{1})
			var rst *http2.RSTStreamFrame
			var away *http2.GoAwayFrame
			last := c.until(func(f http2.Frame) bool {
				switch f := f.(type) {
				case *http2.RSTStreamFrame:
					rst = f
				case *http2.GoAwayFrame:
					away = f
				case *http2.PingFrame:
					return f.IsAck()
				}
				return false
			})
			if tt.rst != 0 {
				if rst == nil || rst.StreamID != 1 || rst.ErrCode != tt.rst || away != nil || last == nil {
					t.Errorf("got RST_STREAM %v, GOAWAY %v, PING answered %v; want RST_STREAM %v on stream 1 and the connection serving on",
						rst, away, last != nil, tt.rst)
				}
				if got := s.Stats().Streams; got != 0 {
					t.Errorf("got %d streams, want none: the stream never reached the server", got)
				}
				return
			}
			if away == nil || away.ErrCode != tt.away || last != nil {
				t.Errorf("got GOAWAY %v, PING answered %v; want GOAWAY %v, then the close", away, last != nil, tt.away)
			}
		})
	}
}
