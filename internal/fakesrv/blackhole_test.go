//go:build linux

package fakesrv

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// newBlackhole starts a blackhole that is closed when the test ends.
func newBlackhole(t *testing.T, ip string, port int) *Blackhole {
	t.Helper()
	b, err := NewBlackhole(ip, port)
	if err != nil {
		t.Fatalf("NewBlackhole(%q, %d): %v", ip, port, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// TestBlackholeDropsSYNs: three loopback IPs on one port, as for a name with three
// addresses; each connect times out after the dialer's timeout, twice in a row (a dropped SYN
// leaves the queue full), and is never refused.
func TestBlackholeDropsSYNs(t *testing.T) {
	b2 := newBlackhole(t, "127.0.0.2", 0)
	b3 := newBlackhole(t, "127.0.0.3", b2.Port)
	b4 := newBlackhole(t, "127.0.0.4", b2.Port)
	const timeout = 200 * time.Millisecond
	for _, b := range []*Blackhole{b2, b3, b4} {
		t.Run(b.Addr, func(t *testing.T) {
			t.Parallel()
			if _, port, _ := net.SplitHostPort(b.Addr); port != strconv.Itoa(b2.Port) || b.Port != b2.Port {
				t.Errorf("got Addr %s Port %d, want port %d", b.Addr, b.Port, b2.Port)
			}
			for try := 1; try <= 2; try++ {
				d := net.Dialer{Timeout: timeout}
				start := time.Now()
				c, err := d.Dial("tcp", b.Addr)
				took := time.Since(start)
				if err == nil {
					c.Close()
					t.Fatalf("dial %d: connected, want a timeout", try)
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() || errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("dial %d: got %v, want a timeout", try, err)
				}
				if took < timeout || took > timeout+slack {
					t.Errorf("dial %d took %v, want between %v and %v", try, took, timeout, timeout+slack)
				}
			}
		})
	}
}

func TestBlackholeDefaultIP(t *testing.T) {
	b := newBlackhole(t, "", 0)
	if host, _, _ := net.SplitHostPort(b.Addr); host != "127.0.0.1" || b.Port == 0 {
		t.Errorf("got Addr %s Port %d, want 127.0.0.1 and a port", b.Addr, b.Port)
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count open fds: %v", err)
	}
	return len(ents)
}

// TestBlackholeClose: Close releases both sockets and leaves no goroutine; the port is then
// refused, and free to bind again.
func TestBlackholeClose(t *testing.T) {
	// The first network use opens the runtime's netpoller descriptors for good.
	warm, err := NewBlackhole("127.0.0.2", 0)
	if err != nil {
		t.Fatalf("NewBlackhole: %v", err)
	}
	warm.Close()

	before := openFDs(t)
	b, err := NewBlackhole("127.0.0.2", 0)
	if err != nil {
		t.Fatalf("NewBlackhole: %v", err)
	}
	if got, want := openFDs(t), before+2; got != want {
		t.Errorf("open fds with a blackhole: got %d, want %d (listener and filler)", got, want)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	if got := openFDs(t); got != before {
		t.Errorf("open fds after Close: got %d, want %d", got, before)
	}
	if c, err := net.DialTimeout("tcp", b.Addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		if err == nil {
			c.Close()
		}
		t.Errorf("dial after Close: got %v, want connection refused", err)
	}
	again := newBlackhole(t, "127.0.0.2", b.Port)
	if again.Addr != b.Addr {
		t.Errorf("rebind: got Addr %s, want %s", again.Addr, b.Addr)
	}
	if err := again.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	goleak.VerifyNone(t)
}

func TestNewBlackholeRefuses(t *testing.T) {
	tests := []struct {
		name string
		ip   string
		port int
	}{
		{"private", "10.0.0.1", 0},
		{"unspecified", "0.0.0.0", 0},
		{"public", "8.8.8.8", 0},
		{"IPv6 loopback", "::1", 0},
		{"IPv4-mapped loopback", "::ffff:127.0.0.1", 0},
		{"name", "localhost", 0},
		{"host and port", "127.0.0.1:80", 0},
		{"negative port", "127.0.0.1", -1},
		{"port too large", "127.0.0.1", 65536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBlackhole(tt.ip, tt.port)
			if err == nil {
				b.Close()
				t.Fatalf("NewBlackhole(%q, %d): got %s, want an error", tt.ip, tt.port, b.Addr)
			}
			if !strings.HasPrefix(err.Error(), "fakesrv: ") {
				t.Errorf("got error %q, want the prefix \"fakesrv: \"", err)
			}
		})
	}
}
