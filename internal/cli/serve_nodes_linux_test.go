package cli

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeNodesAfterEMFILE: a node that ran out of file descriptors answers again once they
// are free. The node runs in a process limited to 64 (RLIMIT_NOFILE); 80 connections held
// open make its accept fail with EMFILE; once they are closed, a request must be answered
// (before, the first EMFILE stopped the node's accept loop for good).
func TestServeNodesAfterEMFILE(t *testing.T) {
	p := startServeProcessEnv(t, []string{helperNofileEnv + "=64"}, "--h2c")
	exhaustFDs(t, p, strings.TrimPrefix(p.url, "http://"))
	c := h2cClient(t, 10*time.Second)
	resp, err := c.Get(p.url + "/3/device/x")
	if err != nil {
		t.Fatalf("no answer after the fds were freed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("got %d, want 200", resp.StatusCode)
	}
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != exitPass {
		t.Errorf("got exit %d, want 0; stderr %q", code, p.stderr.String())
	}
}

// exhaustFDs holds up to 80 connections to addr open, so that p, limited to 64 file
// descriptors, meets EMFILE on its next accept, then closes them all again.
func exhaustFDs(t *testing.T, p *serveProcess, addr string) {
	t.Helper()
	var held []net.Conn
	for range 80 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break // the backlog is full: as good
		}
		held = append(held, c)
	}
	time.Sleep(300 * time.Millisecond) // the server meets EMFILE
	if fds := procFDs(t, p.cmd.Process.Pid); fds < 60 {
		t.Logf("the server has %d fds open, want the limit of 64 reached", fds)
	}
	for _, c := range held {
		c.Close()
	}
}
