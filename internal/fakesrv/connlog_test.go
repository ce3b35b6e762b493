package fakesrv

import (
	"net"
	"testing"
	"time"
)

// TestConnsRecordHowConnectionsEnd: a client that closes its socket shows as a FIN, one that
// closes with SO_LINGER 0 as an RST, a connection the server closes (/close-after-read) as
// the server's; each at the moment it happened.
func TestConnsRecordHowConnectionsEnd(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	addr := s.URL[len("http://"):]
	tests := []struct {
		name string
		path string
		rst  bool
		want ConnEnd
	}{
		{"client closes", "/stall", false, ConnFIN},
		{"client resets", "/stall", true, ConnRST},
		{"server closes", "/close-after-read", false, ConnServer},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("GET " + tt.path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			left := time.Now()
			if tt.rst {
				_ = c.(*net.TCPConn).SetLinger(0)
			}
			c.Close()
			var got Conn
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if cs := s.Conns(); len(cs) > i && cs[i].End != ConnOpen {
					got = cs[i]
					break
				}
			}
			if got.End != tt.want {
				t.Fatalf("got end %q, want %q", got.End, tt.want)
			}
			if got.ID != i+1 {
				t.Errorf("got id %d, want %d", got.ID, i+1)
			}
			if tt.want != ConnServer {
				if d := got.Ended.Sub(left); d < 0 || d > 20*time.Millisecond {
					t.Errorf("ended %v after the client left, want 0 to 20 ms", d)
				}
			}
		})
	}
	s.Reset()
	if n := len(s.Conns()); n != 0 {
		t.Errorf("after Reset: got %d conns, want 0", n)
	}
}
