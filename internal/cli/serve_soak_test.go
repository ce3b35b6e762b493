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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv"
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
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
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

	var wg sync.WaitGroup
	var ops atomic.Int64 // operations started, bounded by soakMaxOps
	type tally struct{ ok, bad atomic.Int64 }
	loads := soakLoads()
	tallies := make([]tally, len(loads))
	for i, l := range loads {
		for range l.workers {
			wg.Go(func() {
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				for ctx.Err() == nil && ops.Add(1) <= soakMaxOps {
					if l.do(ctx, c, p.url, int(tallies[i].ok.Load()+tallies[i].bad.Load())) {
						tallies[i].ok.Add(1)
					} else if ctx.Err() == nil {
						tallies[i].bad.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	peak := <-peakFDs
	st := waitForStats(t, p.url, func(st fakesrv.Stats) bool { return st.ConnectionsOpen <= 1 })
	fds := procFDs(t, pid)
	utime, stime := procStat(t, pid)
	hwm := procStatus(t, pid, "VmHWM")
	p.cmd.Process.Signal(syscall.SIGTERM)
	code := p.wait(t)

	var total int64
	for i, l := range loads {
		ok, bad := tallies[i].ok.Load(), tallies[i].bad.Load()
		total += ok + bad
		t.Logf("%-42s %7d as expected, %d not", l.name, ok, bad)
		if bad > ok/100 {
			t.Errorf("%s: %d of %d not as expected", l.name, bad, ok+bad)
		}
	}
	fmt.Printf("soak %v: %d operations, %d requests counted by the server, %d order ids refused; "+
		"peak RSS %s, CPU %.1f s (user %.1f, system %.1f), open fds %d at start, %d at peak, %d at the end; exit %d\n",
		*soakFor, total, soakRequests(st), st.Dropped.Orders, hwm, float64(utime+stime)/100, float64(utime)/100,
		float64(stime)/100, fds0, peak, fds, code)
	if fds > fds0+2 || code != exitPass {
		t.Errorf("got %d fds at the end (%d at start) and exit %d, want the connections closed and exit 0", fds, fds0, code)
	}
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
