package fakesrv

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// closedWithin reads c until the server closes it, and returns how long that took; it fails
// the test when the server has not closed it within limit.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("still open after %v", limit)
	}
	return time.Since(start)
}

// TestTLSLimits: a stall connection the client sends nothing on, and a good one left idle
// after an answer, are closed after the idle timeout; one the client keeps busy is closed at
// the maximum duration.
func TestTLSLimits(t *testing.T) {
	base, err := NewTLSFaults()
	if err != nil {
		t.Fatal(err)
	}
	limits := TLSLimits{MaxDuration: 1500 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
	f, err := base.WithLimits(limits)
	if err != nil {
		t.Fatal(err)
	}
	stall, err := f.Listen(TLSStall, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	good, err := f.Listen(TLSGood, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()

	t.Run("stall idle", func(t *testing.T) {
		c, err := net.Dial("tcp", stall.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("\x16\x03\x01\x00\x05hello"))
		if took := closedWithin(t, c, 5*time.Second); took < limits.IdleTimeout-50*time.Millisecond {
			t.Errorf("closed after %v, before the %v idle timeout", took, limits.IdleTimeout)
		}
	})
	t.Run("stall busy", func(t *testing.T) {
		c, err := net.Dial("tcp", stall.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a byte every 100 ms: never idle
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					_, _ = c.Write([]byte{0})
				}
			}
		}()
		if took := closedWithin(t, c, 6*time.Second); took < limits.MaxDuration-100*time.Millisecond {
			t.Errorf("closed after %v, before the %v maximum", took, limits.MaxDuration)
		}
	})
	t.Run("good idle", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.Pool()}}
		defer tr.CloseIdleConnections()
		var raw net.Conn
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			raw = c
			return c, err
		}
		resp, err := (&http.Client{Transport: tr}).Get(good.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// The pooled connection is the server's to close: a read on the raw conn sees it.
		if took := closedWithin(t, raw, 5*time.Second); took > 4*time.Second {
			t.Errorf("closed after %v, want about the %v idle timeout", took, limits.IdleTimeout)
		}
	})
	if _, err := base.WithLimits(TLSLimits{MaxDuration: time.Second}); err == nil {
		t.Error("WithLimits accepted a zero idle timeout")
	}
}

// flakyListener fails its first fails Accepts with EMFILE, as a process out of file
// descriptors does, then accepts.
type flakyListener struct {
	net.Listener
	fails atomic.Int64
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestStallAcceptRetries: the stall listener's accept loop waits out an EMFILE and accepts
// again, and Close ends its back-off.
func TestStallAcceptRetries(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &TLSFaultServer{Addr: ln.Addr().String(), Fault: TLSStall, ln: ln, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	fl := &flakyListener{Listener: &countingListener{Listener: ln, n: &s.accepted}}
	fl.fails.Store(4)
	s.wg.Add(1)
	go s.stall(fl, time.Minute)
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for end := time.Now().Add(5 * time.Second); s.Accepted() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if s.Accepted() != 1 {
		t.Errorf("accepted %d after 4 EMFILEs, want 1", s.Accepted())
	}
	fl.fails.Store(1 << 30) // back-off from now on: Close must end it
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Error("Close did not end the accept back-off")
	}
}
