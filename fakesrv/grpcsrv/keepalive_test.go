package grpcsrv

import (
	"bytes"
	"context"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// openHang opens a stream whose call hangs, so that the server has a stream and sends nothing.
func (c *rawConn) openHang(id uint32) {
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, h := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", MethodCall}, {":authority", "x"},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {FaultHeader, "hang"}} {
		enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true})
	c.fr.WriteData(id, true, make([]byte, 5)) // an empty message
}

// pings sends n pings, each followed by an empty SETTINGS whose ack marks the server's answer
// to it as written, and returns the GOAWAY that ended them, if one did, and after which ping.
func (c *rawConn) pings(n int) (*http2.GoAwayFrame, int) {
	for i := 1; i <= n; i++ {
		c.fr.WritePing(false, [8]byte{byte(i)})
		c.fr.WriteSettings()
		f := c.until(func(f http2.Frame) bool {
			s, ok := f.(*http2.SettingsFrame)
			return goAway(f) || (ok && s.IsAck())
		})
		if g, ok := f.(*http2.GoAwayFrame); ok || f == nil {
			return g, i
		}
	}
	return nil, n
}

// TestKeepaliveEnforcement holds the server to grpc-go's rule (handlePing, internal/transport/
// http2_server.go): a ping sooner than MinTime after the previous one is a strike, or sooner
// than 2 hours when no stream is open and pings without a stream are not permitted; the first
// ping is never one, and the third strike, the fourth ping, gets GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings", counted in Stats.
func TestKeepaliveEnforcement(t *testing.T) {
	tests := []struct {
		name       string
		minTime    time.Duration
		permit     bool
		stream     bool
		wantGoAway bool
	}{
		{"pings within 5s on a stream", 5 * time.Second, false, true, true},
		{"pings without a stream, not permitted", time.Millisecond, false, false, true},
		{"pings without a stream, permitted, slower than MinTime", time.Millisecond, true, false, false},
		{"pings on a stream, slower than MinTime", time.Millisecond, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := start(t, WithKeepaliveEnforcement(tt.minTime, tt.permit))
			c := dialRaw(t, s)
			// The ack of dialRaw's SETTINGS, so that each ack after it answers pings' marker.
			c.until(func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && s.IsAck() })
			if tt.stream {
				c.openHang(1)
			}
			if !tt.wantGoAway {
				for i := 1; i <= 4; i++ {
					time.Sleep(2 * tt.minTime)
					if g, _ := c.pings(1); g != nil {
						t.Fatalf("ping %d: got GOAWAY %v %q, want none", i, g.ErrCode, g.DebugData())
					}
				}
				if st := s.Stats(); st.TooManyPings != 0 || st.Pings != 4 {
					t.Errorf("got %d pings, %d too_many_pings GOAWAYs; want 4 and 0", st.Pings, st.TooManyPings)
				}
				return
			}
			g, after := c.pings(6)
			if g == nil || g.ErrCode != http2.ErrCodeEnhanceYourCalm || string(g.DebugData()) != "too_many_pings" {
				t.Fatalf("got %v after ping %d, want GOAWAY ENHANCE_YOUR_CALM too_many_pings", g, after)
			}
			if after != 4 {
				t.Errorf("the GOAWAY came after ping %d, want 4: the third strike", after)
			}
			if st := s.Stats(); st.TooManyPings != 1 || st.Pings != 4 {
				t.Errorf("got %d pings, %d too_many_pings GOAWAYs; want 4 and 1", st.Pings, st.TooManyPings)
			}
		})
	}
}

// TestStatusOnDemand: status=CODE answers that code after the work, and ok-on=N lets attempt N
// through, as unavailable does.
func TestStatusOnDemand(t *testing.T) {
	_, cc := start(t)
	ctx := context.Background()
	for attempt, want := range []codes.Code{codes.ResourceExhausted, codes.ResourceExhausted, codes.OK} {
		err := invoke(ctx, cc, "s", "status=RESOURCE_EXHAUSTED,ok-on=3")
		if got := status.Code(err); got != want {
			t.Errorf("attempt %d: got %v, want %v", attempt+1, err, want)
		}
	}
	if err := invoke(ctx, cc, "p", "status=PERMISSION_DENIED"); status.Code(err) != codes.PermissionDenied ||
		status.Convert(err).Message() != "labrun: PERMISSION_DENIED after the work (attempt 1)" {
		t.Errorf("got %v, want PERMISSION_DENIED with the server's message", err)
	}
}
