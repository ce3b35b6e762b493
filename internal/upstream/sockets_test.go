package upstream

import (
	"context"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSockets(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:A1B2 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0
   2: 0100007F:A1B3 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   3: 0100007F:1F90 0100007F:A1B3 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
   4: 0100007F:C000 0100007F:1F91 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0
`
	got, err := parseSockets(strings.NewReader(table), 0x1F90)
	if err != nil {
		t.Fatal(err)
	}
	want := []Socket{{"0100007F:A1B2", StateTimeWait}, {"0100007F:A1B3", StateEstablished}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCallerSocketsTimeWait closes a connection from the caller's side and finds it in
// TIME_WAIT in the kernel's table.
func TestCallerSocketsTimeWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before := socketsTo(t, port)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 1)
		_, _ = c.Read(buf) // until the caller's FIN
		c.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	wantTimeWait(t, port, before)
}

// socketsTo is the set of sockets to port before a test opens its own: an earlier listener
// on the same port, in this or another test process, can have left some in TIME_WAIT.
func socketsTo(t *testing.T, port int) map[string]bool {
	t.Helper()
	socks, err := CallerSockets(port)
	if err != nil {
		t.Skipf("no /proc/net/tcp here: %v", err)
	}
	set := map[string]bool{}
	for _, s := range socks {
		set[s.Local] = true
	}
	return set
}

// wantTimeWait fails the test unless the one socket to port that was not in before ends in
// TIME_WAIT within 2 s, and checks that NewTimeWaits counts it.
func wantTimeWait(t *testing.T, port int, before map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		all, err := CallerSockets(port)
		if err != nil {
			t.Skipf("no /proc/net/tcp here: %v", err)
		}
		var socks []Socket
		for _, s := range all {
			if !before[s.Local] {
				socks = append(socks, s)
			}
		}
		if len(socks) == 1 && socks[0].State == StateTimeWait {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v, want one socket in TIME_WAIT", socks)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n, err := NewTimeWaits(context.Background(), port, before); n != 1 || err != nil {
		t.Errorf("NewTimeWaits: got %d, %v; want 1", n, err)
	}
	if set, err := TimeWaitSet(port); err != nil || len(set) < 1 || !set[socks0(t, port, before)] {
		t.Errorf("TimeWaitSet: got %v, %v; want the test's socket in it", set, err)
	} else if n, _ := NewTimeWaits(context.Background(), port, set); n != 0 {
		t.Errorf("NewTimeWaits without the sockets before: got %d, want 0", n)
	}
}

// TestDownstreamCallerLeavesTimeWait: a client that gives up during a pause closes first and
// keeps its socket in TIME_WAIT; an empty 200 written after it left would have drawn an RST
// from its kernel, and the socket would have skipped TIME_WAIT.
func TestDownstreamCallerLeavesTimeWait(t *testing.T) {
	d, err := NewDownstream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.PauseUntil(time.Now().Add(time.Minute))
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(d.URL, "http://"))
	port, _ := strconv.Atoi(portText)
	before := socketsTo(t, port)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Millisecond}
	if _, err := c.Get(d.URL + "/delay"); err == nil {
		t.Fatal("got an answer during the pause, want a timeout")
	}
	wantTimeWait(t, port, before)
}

// socks0 is the local name of the one socket to port that was not in before.
func socks0(t *testing.T, port int, before map[string]bool) string {
	t.Helper()
	all, _ := CallerSockets(port)
	for _, s := range all {
		if !before[s.Local] {
			return s.Local
		}
	}
	return ""
}
