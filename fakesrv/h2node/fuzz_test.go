package h2node

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzFrames sends a node the frames an input describes, through x/net/http2's Framer with
// illegal writes allowed, reads what the node answers, and then checks that the node still
// answers a request on a new connection: no input may crash it, hang it or stop it from
// accepting. The seed corpus is in testdata/fuzz/FuzzFrames; run it longer with
//
//	go test -run '^$' -fuzz FuzzFrames -fuzztime 3m -parallel 1 ./fakesrv/h2node
func FuzzFrames(f *testing.F) {
	n, err := New(WithMaxStreams(4), WithThrottle(true), WithIdleTimeout(time.Second))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { n.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("tcp", n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(nc, http2.ClientPreface)
		fr := http2.NewFramer(nc, nc)
		fr.AllowIllegalWrites = true
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		// The node handles frames in order: the ACK of a last PING says it handled them all.
		done := [8]byte{'f', 'u', 'z', 'z', 'd', 'o', 'n', 'e'}
		read := make(chan struct{})
		go func() { // a client that reads, until the ACK, the end of the connection or the deadline
			defer close(read)
			for range 10_000 {
				f, err := fr.ReadFrame()
				if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == done {
					return
				}
				if _, ok := err.(http2.StreamError); err != nil && !ok {
					return
				}
			}
		}()
		playFrames(fr, data)
		fr.WritePing(false, done)
		<-read
		nc.Close()
		if err := oneRequest(n.Addr); err != nil {
			t.Fatalf("the node no longer answers after %x: %v", data, err)
		}
	})
}

// playFrames writes the frames data describes: an opcode byte, then the frame's fields from
// the bytes that follow. It stops at the end of data or at the first failed write.
func playFrames(fr *http2.Framer, data []byte) {
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	next := func(k int) []byte {
		k = min(k, len(data))
		b := data[:k]
		data = data[k:]
		return b
	}
	u8 := func() byte {
		if b := next(1); len(b) == 1 {
			return b[0]
		}
		return 0
	}
	u32 := func() uint32 {
		var b [4]byte
		copy(b[:], next(4))
		return binary.BigEndian.Uint32(b[:])
	}
	id := func() uint32 { return uint32(u8()) } // small ids collide with each other: more states
	for len(data) > 0 {
		var err error
		switch op := u8() % 12; op {
		case 0, 1: // a request (op 1: without END_HEADERS, for CONTINUATION to follow)
			hbuf.Reset()
			path := "/" + string(next(int(u8()%32)))
			if u8()%4 == 0 {
				path = "/?delay=" + string(next(int(u8()%8)))
			}
			for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
				{Name: ":authority", Value: "node"}, {Name: ":path", Value: path}} {
				enc.WriteField(f)
			}
			flags := u8()
			err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id(), BlockFragment: hbuf.Bytes(),
				EndStream: flags&1 == 0, EndHeaders: op == 0, Priority: http2.PriorityParam{Weight: flags}})
		case 2:
			sid, flags := id(), u8()
			err = fr.WriteContinuation(sid, flags&1 == 0, next(int(u8())))
		case 3:
			sid, flags := id(), u8()
			err = fr.WriteData(sid, flags&1 == 0, next(int(u8())))
		case 4:
			var ss []http2.Setting
			for range u8() % 4 {
				ss = append(ss, http2.Setting{ID: http2.SettingID(u8() % 8), Val: u32()})
			}
			err = fr.WriteSettings(ss...)
		case 5:
			err = fr.WriteSettingsAck()
		case 6:
			sid := id()
			err = fr.WriteWindowUpdate(sid, u32())
		case 7:
			sid := id()
			err = fr.WriteRSTStream(sid, http2.ErrCode(u8()%16))
		case 8:
			var p [8]byte
			copy(p[:], next(8))
			err = fr.WritePing(u8()%2 == 0, p)
		case 9:
			sid := id()
			err = fr.WritePriority(sid, http2.PriorityParam{StreamDep: id(), Weight: u8()})
		case 10:
			sid := id()
			err = fr.WriteGoAway(sid, http2.ErrCode(u8()%16), next(int(u8()%16)))
		case 11:
			t, flags, sid := http2.FrameType(u8()%12), http2.Flags(u8()), id()
			err = fr.WriteRawFrame(t, flags, sid, next(int(u8())))
		}
		if err != nil {
			return
		}
	}
}
