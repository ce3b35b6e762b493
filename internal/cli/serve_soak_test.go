package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"golang.org/x/net/http2"
)

// soakFor is how long TestServeSoak hammers labrun serve; it is skipped without it.
var soakFor = flag.Duration("soak", 0, "run TestServeSoak for this long, e.g. -soak 60s")

// soakMaxOps bounds the operations of a soak, whatever its duration: at the rate of this
// 2-core machine, some 10 minutes' worth.
const soakMaxOps = 5_000_000

// soakLoad is one kind of traffic of the soak: one call of do is one operation, repeated by
// workers goroutines until the soak ends. do reports whether the server answered as it
// should.
type soakLoad struct {
	name    string
	workers int
	do      func(ctx context.Context, c *http.Client, url string, n int) bool
}

// soakLoads is the soak's traffic: stalls given up by the client, trickles slow and fast,
// request bodies sent a byte at a time, thousands of order ids (long ones too), connections
// left idle, and connection faults.
func soakLoads() []soakLoad {
	get := func(ctx context.Context, c *http.Client, url string, timeout time.Duration) (int, error) {
		return soakGet(ctx, c, "POST", url, timeout)
	}
	return []soakLoad{
		{"stall, client gives up at 300ms", 4, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			_, err := get(ctx, c, u+"/stall", 300*time.Millisecond)
			return err != nil
		}},
		{"trickle 1 MiB at 1 B/ms, cut at the 2s cap", 2, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			_, err := get(ctx, c, u+"/trickle?bytes=1048576&every=1ms", 5*time.Second)
			return err != nil // the cap cuts the body short
		}},
		{"trickle 20 B at 5ms", 2, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			code, err := get(ctx, c, u+"/trickle?bytes=20&every=5ms", 5*time.Second)
			return err == nil && code == 200
		}},
		{"request body at 1 B/100ms", 2, func(ctx context.Context, _ *http.Client, u string, _ int) bool {
			return soakSlowBody(ctx, strings.TrimPrefix(u, "http://"))
		}},
		{"reserve, a new 200-byte order id each", 4, func(ctx context.Context, c *http.Client, u string, n int) bool {
			code, err := get(ctx, c, fmt.Sprintf("%s/reserve?order=%0200d", u, n), 5*time.Second)
			return err == nil && (code == 200 || code == 507) // 507 once 10,000 ids are known
		}},
		{"reserve, a 300-byte order id", 1, func(ctx context.Context, c *http.Client, u string, n int) bool {
			code, err := get(ctx, c, fmt.Sprintf("%s/reserve?order=%0300d", u, n), 5*time.Second)
			return err == nil && code == 400
		}},
		{"a connection left idle", 1, func(ctx context.Context, _ *http.Client, u string, _ int) bool {
			return soakIdle(ctx, strings.TrimPrefix(u, "http://"))
		}},
		{"reset, close-after-read, redirect loop", 1, func(ctx context.Context, c *http.Client, u string, n int) bool {
			path := []string{"/reset", "/close-after-read", "/redirect-loop"}[n%3]
			_, err := get(ctx, c, u+path, 5*time.Second)
			return err != nil // each is a failure on the client's side
		}},
	}
}

// soakGet sends method to url, bounded by timeout, reads the whole answer and returns its
// status.
func soakGet(ctx context.Context, c *http.Client, method, url string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// soakSlowBody sends a request body one byte every 100 ms and reports whether the server
// answered 408 and closed the connection within its read timeout (2 s, plus a margin).
func soakSlowBody(ctx context.Context, addr string) bool {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(4 * time.Second))
	io.WriteString(conn, "POST /delay HTTP/1.1\r\nHost: soak\r\nContent-Length: 1000\r\n\r\n")
	go func() {
		for ctx.Err() == nil {
			if _, err := conn.Write([]byte("b")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusRequestTimeout
}

// soakIdle sends one request on a connection, then leaves it idle, and reports whether the
// server closed it within its idle timeout (2 s, plus a margin).
func soakIdle(ctx context.Context, addr string) bool {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(4 * time.Second))
	io.WriteString(conn, "GET /delay HTTP/1.1\r\nHost: soak\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	_, err = io.Copy(io.Discard, rd) // ends when the server closes
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestServeSoak hammers labrun serve, run as a process of its own with --max-duration 2s,
// for -soak (60 s for the figures in docs/serve.md) with soakLoads, then prints its peak
// RSS, CPU time and open file descriptors, and checks that it is still healthy: bounded,
// answering, with its connections closed, and stopping with exit 0.
func TestServeSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("run with -soak 60s")
	}
	p := startServeProcess(t, "--max-duration", "2s")
	pid := p.cmd.Process.Pid
	fds0 := procFDs(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), *soakFor)
	defer cancel()
	peakFDs := make(chan int, 1)
	go func() { peakFDs <- soakSample(ctx, t, pid) }()

	loads := soakLoads()
	tallies := soakDrive(ctx, loads, func() *http.Transport { return &http.Transport{} }, p.url)
	peak := <-peakFDs
	st := waitForStats(t, p.url, func(st fakesrv.Stats) bool { return st.ConnectionsOpen <= 1 })
	fds := procFDs(t, pid)
	utime, stime := procStat(t, pid)
	hwm := procStatus(t, pid, "VmHWM")
	p.cmd.Process.Signal(syscall.SIGTERM)
	code := p.wait(t)

	total := soakCheck(t, loads, tallies)
	fmt.Printf("soak %v: %d operations, %d requests counted by the server, %d order ids refused; "+
		"peak RSS %s, CPU %.1f s (user %.1f, system %.1f), open fds %d at start, %d at peak, %d at the end; exit %d\n",
		*soakFor, total, soakRequests(st), st.Dropped.Orders, hwm, float64(utime+stime)/100, float64(utime)/100,
		float64(stime)/100, fds0, peak, fds, code)
	if fds > fds0+2 || code != exitPass {
		t.Errorf("got %d fds at the end (%d at start) and exit %d, want the connections closed and exit 0", fds, fds0, code)
	}
}

// soakTally counts a load's operations that went as expected and those that did not.
type soakTally struct{ ok, bad atomic.Int64 }

// soakDrive runs loads against url until ctx is done or soakMaxOps operations started, each
// worker with a client of its own over a transport from newTransport, and returns their
// tallies.
func soakDrive(ctx context.Context, loads []soakLoad, newTransport func() *http.Transport, url string) []soakTally {
	var wg sync.WaitGroup
	var ops atomic.Int64 // operations started, bounded by soakMaxOps
	tallies := make([]soakTally, len(loads))
	for i, l := range loads {
		for range l.workers {
			wg.Go(func() {
				tr := newTransport()
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				for ctx.Err() == nil && ops.Add(1) <= soakMaxOps {
					if l.do(ctx, c, url, int(tallies[i].ok.Load()+tallies[i].bad.Load())) {
						tallies[i].ok.Add(1)
					} else if ctx.Err() == nil {
						tallies[i].bad.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	return tallies
}

// soakCheck logs each load's tally, fails the test when more than 1% of a load's operations
// did not go as expected, and returns the operations in all.
func soakCheck(t *testing.T, loads []soakLoad, tallies []soakTally) int64 {
	t.Helper()
	var total int64
	for i, l := range loads {
		ok, bad := tallies[i].ok.Load(), tallies[i].bad.Load()
		total += ok + bad
		t.Logf("%-46s %7d as expected, %d not", l.name, ok, bad)
		if bad > ok/100 {
			t.Errorf("%s: %d of %d not as expected", l.name, bad, ok+bad)
		}
	}
	return total
}

// soakSample samples the open file descriptors of pid every 250 ms until ctx is done and
// returns the largest count seen.
func soakSample(ctx context.Context, t *testing.T, pid int) int {
	peak := 0
	for ctx.Err() == nil {
		peak = max(peak, procFDs(t, pid))
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return peak
}

// soakRequests sums the requests the server counted.
func soakRequests(st fakesrv.Stats) int {
	n := 0
	for _, v := range st.Requests {
		n += v
	}
	return n
}

// nodeSoakLoads is the nodes' soak traffic: streams on kept connections, over both nodes,
// rejected pushes under the throttle, streams the client resets, a connection per request
// (opened and closed: tens of thousands of them), a protocol violation, and connections left
// idle until --idle-timeout closes them. urls are the node URLs.
func nodeSoakLoads(urls []string) []soakLoad {
	get := func(ctx context.Context, c *http.Client, url string, timeout time.Duration) (int, error) {
		return soakGet(ctx, c, "GET", url, timeout)
	}
	return []soakLoad{
		{"streams of 5 to 50 ms on kept connections", 4, func(ctx context.Context, c *http.Client, _ string, n int) bool {
			code, err := get(ctx, c, fmt.Sprintf("%s/3/device/%d?delay=%dms", urls[n%len(urls)], n, 5+n%46), 5*time.Second)
			return err == nil && code == 200
		}},
		{"rejected pushes (400, the throttle)", 1, func(ctx context.Context, c *http.Client, _ string, n int) bool {
			code, err := get(ctx, c, urls[0]+"/3/device/bad?status=400", 5*time.Second)
			return err == nil && code == 400
		}},
		{"streams reset by the client at 20 ms", 2, func(ctx context.Context, c *http.Client, _ string, n int) bool {
			_, err := get(ctx, c, urls[n%len(urls)]+"/?delay=1s", 20*time.Millisecond)
			return err != nil
		}},
		{"a connection per request, opened and closed", 4, func(ctx context.Context, _ *http.Client, _ string, n int) bool {
			tr := h2cTransport(true)
			defer tr.CloseIdleConnections()
			code, err := get(ctx, &http.Client{Transport: tr}, urls[n%len(urls)]+"/", 5*time.Second)
			return err == nil && code == 200
		}},
		{"an even stream id: GOAWAY PROTOCOL_ERROR", 1, func(ctx context.Context, _ *http.Client, _ string, n int) bool {
			time.Sleep(time.Millisecond) // some 700 a second, not all the CPU
			return soakGoAway(urls[n%len(urls)], http2.ErrCodeProtocol, func(fr *http2.Framer) error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2, BlockFragment: []byte{0x82}, EndHeaders: true, EndStream: true})
			})
		}},
		{"a connection left idle: GOAWAY within 2 s", 1, func(ctx context.Context, _ *http.Client, _ string, n int) bool {
			return soakGoAway(urls[n%len(urls)], http2.ErrCodeNo, func(*http2.Framer) error { return nil })
		}},
	}
}

// h2cTransport is net/http's HTTP/2 client over h2c; with once, every request has a
// connection of its own, closed after it.
func h2cTransport(once bool) *http.Transport {
	tr := &http.Transport{Protocols: new(http.Protocols), DisableKeepAlives: once}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return tr
}

// soakGoAway opens a connection to the node at url, sends the preface, SETTINGS and what
// send writes, and reports whether a GOAWAY with code comes within 4 s.
func soakGoAway(url string, code http2.ErrCode, send func(*http2.Framer) error) bool {
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(4 * time.Second))
	fr := http2.NewFramer(nc, nc)
	fr.AllowIllegalWrites = true
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil || fr.WriteSettings() != nil || send(fr) != nil {
		return false
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode == code
		}
	}
}

// TestServeSoakNodes hammers labrun serve --h2c --nodes 2, run as a process of its own, for
// -soak with nodeSoakLoads, then prints its peak RSS, CPU time and open file descriptors and
// checks that it is still healthy: every connection closed, exit 0 on SIGTERM, and its
// resident set flat once tens of thousands of connections came and went (each leaves an
// 8-byte record; before, each kept some 10 KB).
func TestServeSoakNodes(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("run with -soak 60s")
	}
	urlFile := filepath.Join(t.TempDir(), "urls.txt")
	p := startServeProcess(t, "--h2c", "--nodes", "2", "--max-concurrent-streams", "50", "--throttle",
		"--latency", "5ms", "--idle-timeout", "2s", "--url-file", urlFile)
	data, err := os.ReadFile(urlFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	urls, stats := lines[:len(lines)-1], lines[len(lines)-1]
	pid := p.cmd.Process.Pid
	fds0 := procFDs(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), *soakFor)
	defer cancel()
	peakFDs := make(chan int, 1)
	go func() { peakFDs <- soakSample(ctx, t, pid) }()
	// The resident set once 10,000 connections came and went, and at the end.
	rssAt10k := make(chan int64, 1)
	go func() {
		for ctx.Err() == nil {
			if conns := nodeConns(t, stats); conns >= 10_000 {
				rssAt10k <- procStatusKB(t, pid, "VmRSS")
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		rssAt10k <- 0
	}()
	loads := nodeSoakLoads(urls)
	tallies := soakDrive(ctx, loads, func() *http.Transport {
		tr := h2cTransport(false)
		tr.HTTP2 = &http.HTTP2Config{StrictMaxConcurrentRequests: true}
		return tr
	}, urls[0])
	peak, mid := <-peakFDs, <-rssAt10k
	http.DefaultClient.CloseIdleConnections() // nodesStats's keep-alive to the control server
	deadline := time.Now().Add(5 * time.Second)
	for procFDs(t, pid) > fds0+1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	conns, st := nodeConns(t, stats), nodesStats(t, stats)
	fds := procFDs(t, pid)
	end := procStatusKB(t, pid, "VmRSS")
	utime, stime := procStat(t, pid)
	hwm := procStatus(t, pid, "VmHWM")
	p.cmd.Process.Signal(syscall.SIGTERM)
	code := p.wait(t)
	total := soakCheck(t, loads, tallies)
	streams := 0
	for _, n := range st {
		streams += n.Requests
	}
	fmt.Printf("soak of the nodes %v: %d operations, %d connections, %d streams; RSS %d kB at 10,000 connections, %d kB at the end, "+
		"peak RSS %s, CPU %.1f s (user %.1f, system %.1f), open fds %d at start, %d at peak, %d at the end; exit %d\n",
		*soakFor, total, conns, streams, mid, end, hwm, float64(utime+stime)/100, float64(utime)/100, float64(stime)/100, fds0, peak, fds, code)
	if fds > fds0+2 || code != exitPass {
		t.Errorf("got %d fds at the end (%d at start) and exit %d, want the connections closed and exit 0", fds, fds0, code)
	}
	// Flat: from 10,000 connections to the end (40,000 in a 60 s soak), the resident set grows
	// by less than 16 MB. Kept connections would have added some 10 KB each: 300 MB.
	if mid > 0 && end-mid > 16<<10 {
		t.Errorf("RSS grew from %d kB at 10,000 connections to %d kB at %d, want less than 16 MB more", mid, end, conns)
	}
}

// nodeConns sums the connections the nodes accepted.
func nodeConns(t *testing.T, stats string) int {
	n := 0
	for _, st := range nodesStats(t, stats) {
		n += st.Connections
	}
	return n
}

// procStatusKB returns a field of /proc/PID/status in kB, such as VmRSS.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	var kb int64
	fmt.Sscan(procStatus(t, pid, field), &kb)
	return kb
}
