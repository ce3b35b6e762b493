package cli

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeTLSFaultsAfterEMFILE: the stall listener of --tls-faults accepts again once file
// descriptors are free after a shortage (before, its first EMFILE stopped its accept loop for
// good and new clients waited in the backlog), and closes a connection the client sends
// nothing on after --idle-timeout. The server runs in a process limited to 64 descriptors
// (RLIMIT_NOFILE); 80 connections held open make its accept fail with EMFILE.
func TestServeTLSFaultsAfterEMFILE(t *testing.T) {
	p := startServeProcessEnv(t, []string{helperNofileEnv + "=64"}, "--tls-faults", "--addr", "127.0.14.1:0", "--idle-timeout", "1s")
	// The first line is good's: "good https://good.labrun.test:PORT/ 127.0.14.1".
	f := strings.Fields(p.url)
	if len(f) != 3 || f[0] != "good" {
		t.Fatalf("first line %q, want good's", p.url)
	}
	port := f[1][strings.LastIndexByte(f[1], ':')+1 : len(f[1])-1]
	stall := net.JoinHostPort("127.0.14.2", port)
	exhaustFDs(t, p, stall)
	c, err := net.DialTimeout("tcp", stall, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("\x16\x03\x01\x00\x05hello")); err != nil {
		t.Fatal(err)
	}
	// Accepted, the connection is closed after the 1 s idle timeout; left in the backlog, never.
	_ = c.SetReadDeadline(time.Now().Add(8 * time.Second))
	start := time.Now()
	if n, err := c.Read(make([]byte, 16)); err != io.EOF && !isReset(err) {
		t.Fatalf("got %d bytes, %v after %v; want the connection closed by the idle timeout", n, err, time.Since(start))
	}
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != exitPass {
		t.Errorf("got exit %d, want 0; stderr %q", code, p.stderr.String())
	}
}

// isReset reports whether err is a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
