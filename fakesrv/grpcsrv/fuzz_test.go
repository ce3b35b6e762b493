package grpcsrv

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/labrun/labrun/internal/testenv"
)

// frontSeeds are frame sequences a client sends after the preface: a call, a refused and a
// frozen one, a reset, and the malformed ones (DATA on stream 0, a frame above 16 KiB, a
// forbidden header, a bad HPACK block, a CONTINUATION out of place).
func frontSeeds() [][]byte {
	var seeds [][]byte
	add := func(write func(fr *http2.Framer)) {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		fr.AllowIllegalWrites = true
		write(fr)
		seeds = append(seeds, b.Bytes())
	}
	block := func(fields ...string) []byte {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i+1 < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return b.Bytes()
	}
	call := func(fault string) []byte {
		return block(":method", "POST", ":scheme", "http", ":path", MethodCall, ":authority", "x",
			"content-type", "application/grpc", "grpc-timeout", "100m", FaultHeader, fault, CallHeader, "c")
	}
	add(func(fr *http2.Framer) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: call(""), EndHeaders: true})
		fr.WriteData(1, true, []byte{0, 0, 0, 0, 0})
		fr.WriteWindowUpdate(0, 1000)
		fr.WritePing(false, [8]byte{1})
		fr.WriteRSTStream(1, http2.ErrCodeCancel)
		fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	})
	for _, fault := range []string{"refuse=1", "goaway=1", "freeze", "work=1s"} {
		add(func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: call(fault), EndHeaders: true})
			fr.WriteData(3, false, []byte("abc"))
			fr.WriteRSTStream(3, http2.ErrCodeCancel)
		})
	}
	add(func(fr *http2.Framer) { fr.WriteData(0, false, []byte("x")) })
	add(func(fr *http2.Framer) { fr.WriteRawFrame(http2.FrameData, 0, 1, make([]byte, maxFrame+1)) })
	add(func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":path", "/", "Upper", "1"), EndHeaders: true})
		fr.WritePing(false, [8]byte{2})
	})
	add(func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff}, EndHeaders: true})
	})
	add(func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: call("")[:10]})
		fr.WriteContinuation(3, true, call("")[10:])
	})
	return seeds
}

// frontTakes is the fuzz property of the front's frame reader: whatever the client sends, the
// front never panics, finishes a finite input within 5 s, and tracks no stream it did not pass.
func frontTakes(s *Server) func(t *testing.T, data []byte) {
	return func(t *testing.T, data []byte) {
		client, peer := net.Pipe()
		backend, sink := net.Pipe()
		defer client.Close()
		defer peer.Close()
		defer backend.Close()
		defer sink.Close()
		go io.Copy(io.Discard, peer)
		go io.Copy(io.Discard, sink)
		fc := &frontConn{s: s, n: 1, client: client, backend: backend, cw: http2.NewFramer(client, nil), open: map[uint32]*Call{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			fc.fromClient(bytes.NewReader(data))
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the front still reads %d bytes 5 s later", len(data))
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		for id := range fc.open {
			if id > fc.lastSent {
				t.Errorf("the front tracks stream %d, above the last it passed (%d)", id, fc.lastSent)
			}
		}
	}
}

// FuzzFrontFrames fuzzes the gRPC front's frame reader (make fuzz); its seeds run in every go
// test.
func FuzzFrontFrames(f *testing.F) {
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	for _, seed := range frontSeeds() {
		f.Add(seed)
	}
	f.Fuzz(frontTakes(s))
}

// TestFrontFramesMutated: 2,000 random variations of the seeds, in the conformance tier.
func TestFrontFramesMutated(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testenv.Mutations(t, frontSeeds(), 2000, frontTakes(s))
}
