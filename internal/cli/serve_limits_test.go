package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/testenv"
)

// TestServeTrickleCPU: a fast trickle must not hold a core. labrun serve waits with plain
// timers and sends the bytes due at a wake-up in one write, so its process spends at most
// 0.2 s of CPU per wall second on /trickle?bytes=1048576&every=1ms (a server that spins
// until each byte's time spends about 1). The server runs as a process of its own, so that
// only its CPU counts, not this test's client's; under the race detector, whose
// instrumentation multiplies CPU time, the bound is raceCPUFactor times larger.
func TestServeTrickleCPU(t *testing.T) {
	testenv.Slow(t, "a trickle soak")
	p := startServeProcess(t, "--max-duration", "5s")
	resp, err := http.Get(p.url + "/trickle?bytes=1048576&every=1ms")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	time.Sleep(300 * time.Millisecond) // under way
	const window = 2 * time.Second
	cpu0, wall0 := procCPU(t, p.cmd.Process.Pid), time.Now()
	time.Sleep(window)
	cpu, wall := procCPU(t, p.cmd.Process.Pid)-cpu0, time.Since(wall0)
	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t)
	<-done
	limit := 0.2 * raceCPUFactor()
	if ratio := cpu.Seconds() / wall.Seconds(); ratio > limit {
		t.Errorf("the trickle cost the server %v of CPU in %v (%.2f per second), want at most %.2f", cpu, wall, ratio, limit)
	} else {
		t.Logf("the trickle cost the server %v of CPU in %v (%.3f per second)", cpu, wall, ratio)
	}
}

// raceCPUFactor is how much the race detector's instrumentation multiplies CPU time, as a
// margin for CPU bounds: 2.5 in a -race build, else 1.
func raceCPUFactor() float64 {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return 2.5
			}
		}
	}
	return 1
}

// TestServeMemoryBounded: order ids and the request log are bounded in bytes, so 300
// reservations with 100 KB ids and 300 requests with 100 KB URLs leave the heap much as it
// was (without bounds they kept about 120 MB).
func TestServeMemoryBounded(t *testing.T) {
	s := startServe(t)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	pad := strings.Repeat("x", 100_000)
	before := heapAlloc()
	var statuses []int
	for i := range 300 {
		for _, path := range []string{fmt.Sprintf("/reserve?order=%d-%s", i, pad), "/delay?pad=" + pad} {
			resp, err := c.Post(s.url+path, "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !slices.Contains(statuses, resp.StatusCode) {
				statuses = append(statuses, resp.StatusCode)
			}
		}
	}
	grown := int64(heapAlloc()) - int64(before)
	if grown > 40<<20 {
		t.Errorf("the heap grew by %d MB, want at most 40 MB", grown>>20)
	}
	t.Logf("heap grew by %.1f MB; statuses %v", float64(grown)/(1<<20), statuses)
}

// heapAlloc returns the bytes of live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestServeConnectionTimeouts: labrun serve does not hold a connection that sends nothing,
// sends its head or body one byte at a time, or sits idle after a request: each is closed
// within --max-duration (1 s here, with a margin of 1.5 s for a loaded machine).
func TestServeConnectionTimeouts(t *testing.T) {
	s := startServe(t, "--max-duration", "1s")
	addr := strings.TrimPrefix(s.url, "http://")
	tests := []struct {
		name   string
		first  string // sent at once
		drip   string // then one byte every 200 ms
		answer bool   // read one response first: the connection is then idle
	}{
		{"silent connection", "", "", false},
		{"slow head", "", "GET /delay HTTP/1.1\r\nHost: lab\r\nX-Slow: " + strings.Repeat("s", 100), false},
		{"slow body", "POST /delay HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n", strings.Repeat("b", 100), false},
		{"idle keep-alive", "GET /delay HTTP/1.1\r\nHost: lab\r\n\r\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.first); err != nil {
				t.Fatal(err)
			}
			go func() {
				for i := 0; i < len(tt.drip); i++ {
					time.Sleep(200 * time.Millisecond)
					if _, err := io.WriteString(conn, tt.drip[i:i+1]); err != nil {
						return
					}
				}
			}()
			rd := bufio.NewReader(conn)
			if tt.answer {
				resp, err := http.ReadResponse(rd, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			start := time.Now()
			conn.SetReadDeadline(start.Add(4 * time.Second))
			_, err = io.Copy(io.Discard, rd)
			held := time.Since(start)
			if ne, ok := err.(net.Error); (ok && ne.Timeout()) || held > 2500*time.Millisecond {
				t.Errorf("the server held the connection %v (%v), want it closed within 1 s + 1.5 s", held, err)
			}
		})
	}
}
