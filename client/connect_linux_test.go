package client

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

// blackhole returns the address of a loopback listener whose accept queue is full: Linux then
// drops new SYNs, so a connect hangs as if the host were down, without root.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.Dial("tcp", addr) // fills the queue of one
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	return addr
}

func TestConnectTimeout(t *testing.T) {
	addr := blackhole(t)
	c := newClient(t, Config{ConnectTimeout: 200 * ms, Retries: 1})
	res, err := get(t, c, "http://"+addr+"/")
	var e *Error
	if !errors.As(err, &e) || e.Outcome != vocab.ConnectTimeout || e.Phase != vocab.PhaseConnect || !errors.Is(err, ErrConnectTimeout) {
		t.Fatalf("got %v, want a connect timeout in the connect phase", err)
	}
	// Whether the alarm or the Dialer's own timer ended it, the error names the address.
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "i/o timeout") {
		t.Errorf("got %q, want the dial's address and an i/o timeout", err)
	}
	if len(res.Attempts) != 2 {
		t.Fatalf("got %d attempts, want 2", len(res.Attempts))
	}
	for i, a := range res.Attempts {
		within(t, fmt.Sprintf("attempt %d connect", i+1), a.Connect, 200*ms)
	}
	if got := c.Stats(); got != (Stats{}) {
		t.Errorf("got %+v, want an empty pool", got)
	}
}

// TestDeadlineAbortsConnect: the deadline ends a hanging connect, and no dial goes on in the
// background afterwards (goleak would see it).
func TestDeadlineAbortsConnect(t *testing.T) {
	addr := blackhole(t)
	c := newClient(t, Config{Deadline: 150 * ms})
	res, err := get(t, c, "http://"+addr+"/")
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("got %v, want the deadline", err)
	}
	within(t, "elapsed", res.Elapsed, 150*ms)
}
