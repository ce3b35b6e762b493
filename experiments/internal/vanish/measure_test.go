//go:build linux

package vanish

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// blackhole returns a loopback address whose SYNs go unanswered: a listener with a backlog of
// 0 whose accept queue holds one connection of the test's own, which makes Linux drop every
// further SYN. It needs no privileges and touches nothing but 127.0.0.1.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
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
	filler, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	time.Sleep(50 * time.Millisecond) // the filler's final ACK queues it on the listener
	return addr
}

// series collects the measured durations of one row.
type series struct {
	mu   sync.Mutex // guards got and errs
	name string
	want time.Duration // the model's value
	doc  time.Duration // the documented value, 0 when the same
	got  []time.Duration
	errs []string
}

func (s *series) add(d time.Duration, note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
	if note != "" && !slices.Contains(s.errs, note) {
		s.errs = append(s.errs, note)
	}
}

func (s *series) line() string {
	g := slices.Clone(s.got)
	slices.Sort(g)
	if len(g) == 0 {
		return fmt.Sprintf("%-44s no sample", s.name)
	}
	med := g[len(g)/2]
	if len(g)%2 == 0 {
		med = (g[len(g)/2-1] + g[len(g)/2]) / 2
	}
	dev := 0.0
	if s.want != 0 {
		dev = float64(med-s.want) / float64(s.want) * 100
	}
	doc := ""
	if s.doc != 0 {
		doc = fmt.Sprintf(" documented %v", s.doc)
	}
	var all []string
	for _, d := range s.got {
		all = append(all, d.Round(time.Millisecond).String())
	}
	return fmt.Sprintf("%-44s median %-9v spread %v..%v (n=%d) model %v (%+.1f%%)%s\n%48s[%s] %s", s.name,
		med.Round(time.Millisecond), g[0].Round(time.Millisecond), g[len(g)-1].Round(time.Millisecond), len(g),
		s.want, dev, doc, "", strings.Join(all, " "), strings.Join(s.errs, "; "))
}

// TestMeasure runs every row of issue 13 LABRUN_MEASURE times and logs, for each, the median
// and the spread next to the model's value. It takes minutes, so it runs only when asked:
//
//	LABRUN_MEASURE=7 go test -run TestMeasure -v -timeout 30m ./netns/vanish/
func TestMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LABRUN_MEASURE"))
	if n <= 0 {
		t.Skip("set LABRUN_MEASURE=N to measure every row N times")
	}
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	lin, err := netns.ReadSysctl("net.ipv4.tcp_syn_linear_timeouts")
	if err != nil {
		lin = "0" // before Linux 6.5
	}
	hostLinear, _ := strconv.Atoi(lin)
	tick := kernelTick(0)
	host := model.Kernel{Tick: tick, SYNLinearTimeouts: hostLinear}
	ns := model.Kernel{Tick: tick}
	veth := model.Kernel{Tick: tick, RTO: 204 * time.Millisecond, TLP: true}
	second := time.Second
	var rows []*series
	row := func(name string, want, doc time.Duration) *series {
		s := &series{name: name, want: want, doc: doc}
		rows = append(rows, s)
		return s
	}
	type dropRows struct{ raw, post, get, goc, rt, dl, after *series }
	hostSYN := map[int]*series{}
	for _, syn := range []int{1, 2} {
		hostSYN[syn] = row(fmt.Sprintf("1. host loopback TCP_SYNCNT %d (linear %d)", syn, hostLinear),
			host.SYNGiveUp(syn), model.SYNGiveUpAfter(syn))
	}
	nsSYN := map[int][2]*series{}
	for _, syn := range []int{1, 2} {
		nsSYN[syn] = [2]*series{
			row(fmt.Sprintf("1. netns TCP_SYNCNT %d (linear 0) dial", syn), ns.SYNGiveUp(syn), 0),
			row(fmt.Sprintf("1. netns tcp_syn_retries %d labrun client", syn), ns.SYNGiveUp(syn), 0),
		}
	}
	ct := [2]*series{row("2. connect timeout 1s: dial", second, 0), row("2. connect timeout 1s: labrun client", second, 0)}
	drops := map[int]dropRows{}
	for _, r := range []int{2, 3, 4} {
		give := veth.DataGiveUp(r)
		drops[r] = dropRows{
			raw:  row(fmt.Sprintf("3. tcp_retries2 %d: raw read", r), give, model.DataGiveUpAfter(r)),
			post: row(fmt.Sprintf("3. tcp_retries2 %d: labrun POST", r), give, 0),
			get:  row(fmt.Sprintf("3. tcp_retries2 %d: labrun GET (+replay)", r), give+second, 0),
			goc:  row(fmt.Sprintf("3. tcp_retries2 %d: Go net/http GET (+replay)", r), give+second, 0),
		}
		if r == 3 {
			d := drops[r]
			d.rt = row("4. read timeout 250ms", 250*time.Millisecond, 0)
			d.dl = row("4. deadline 1s", second, 0)
			d.after = row("5. after stale check passed: read timeout", 250*time.Millisecond, 0)
			drops[r] = d
		}
	}
	var mu sync.Mutex // guards the two counts
	vanishedHealthy, closedHealthy := 0, 0
	kill := row("6. keepalive 1s/1s/3 kill after last rx", ns.KeepaliveGiveUp(second, second, 3), model.KeepaliveGiveUp(second, second, 3))
	next := row("6. next call with keepalive: connect timeout", second, 0)
	noka := row("6. next call without keepalive (r2=2) +replay", veth.DataGiveUp(2)+second, 0)

	h2in := DefaultHTTP2()
	h2ping := row(fmt.Sprintf("7. HTTP/2 health check %v + %v, call %v idle", h2in.SendPingTimeout, h2in.PingTimeout, h2in.Inactivity),
		model.HTTP2PingGiveUp(h2in.SendPingTimeout, h2in.PingTimeout)-h2in.Inactivity, 0)
	h2kernel := row(fmt.Sprintf("7. HTTP/2 no health check, tcp_retries2 %d", h2in.Retries2), veth.DataGiveUp(h2in.Retries2), 0)
	h2deadline := row(fmt.Sprintf("7. HTTP/2 no health check, deadline %v", h2in.Deadline), h2in.Deadline, 0)

	addr := blackhole(t)
	note := func(s Sample) string {
		if s.Err == "" {
			return string(s.Outcome)
		}
		return string(s.Outcome) + ": " + s.Err[:min(len(s.Err), 70)]
	}
	for i := range n {
		var wg sync.WaitGroup
		for syn, s := range hostSYN {
			wg.Go(func() {
				d := DialDown(ctx, addr, syn, 0)
				s.add(d.Elapsed, note(d))
			})
		}
		for syn, s := range nsSYN {
			wg.Go(func() {
				in := DefaultHostDown()
				in.SYNRetries = syn
				res, err := HostDown(ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				s[0].add(res.Dial.Elapsed, note(res.Dial))
				s[1].add(res.Client.Elapsed, note(res.Client))
				if syn == 1 {
					ct[0].add(res.DialTimeout.Elapsed, note(res.DialTimeout))
					ct[1].add(res.ClientTimeout.Elapsed, note(res.ClientTimeout))
				}
			})
		}
		for r, d := range drops {
			wg.Go(func() {
				in := DefaultDropped()
				in.Retries2 = r
				res, err := Dropped(ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				d.raw.add(res.Raw.Elapsed, fmt.Sprintf("%s, rto %v, %d retransmissions", note(res.Raw), res.Kernel.RTO, res.Retransmissions))
				d.post.add(res.ClientPost.Elapsed, note(res.ClientPost))
				d.get.add(res.Client.Elapsed, note(res.Client))
				d.goc.add(res.Go.Elapsed, note(res.Go))
				if d.rt != nil {
					d.rt.add(res.ReadTimeout.Elapsed, note(res.ReadTimeout))
					d.dl.add(res.Deadline.Elapsed, note(res.Deadline))
					d.after.add(res.Stale.After.Elapsed, note(res.Stale.After))
					mu.Lock()
					if res.Stale.VanishedHealthy {
						vanishedHealthy++
					}
					if res.Stale.ClosedHealthy {
						closedHealthy++
					}
					mu.Unlock()
				}
			})
		}
		wg.Go(func() {
			res, err := HTTP2(ctx, h2in)
			if err != nil {
				t.Error(err)
				return
			}
			h2ping.add(res.Ping.Elapsed, fmt.Sprintf("pingLost=%v %s", res.Ping.PingLost, note(res.Ping.Sample)))
			h2kernel.add(res.KernelCall.Elapsed, fmt.Sprintf("rto %v %s", res.Kernel.RTO, note(res.KernelCall.Sample)))
			h2deadline.add(res.Deadline.Elapsed, note(res.Deadline.Sample))
		})
		wg.Go(func() {
			res, err := Keepalive(ctx, DefaultKeepalive())
			if err != nil {
				t.Error(err)
				return
			}
			kill.add(res.Killed.Elapsed, note(res.Killed))
			next.add(res.NextCall.Elapsed, fmt.Sprintf("reused=%v %s", res.NextCall.Reused, note(res.NextCall)))
			noka.add(res.NoKeepalive.Elapsed, fmt.Sprintf("reused=%v %s", res.NoKeepalive.Reused, note(res.NoKeepalive)))
		})
		wg.Wait()
		t.Logf("round %d of %d done", i+1, n)
	}
	for _, s := range rows {
		t.Log(s.line())
	}
	t.Logf("5. stale check: healthy on the vanished connection %d of %d times, on the closed one %d of %d",
		vanishedHealthy, n, closedHealthy, n)
}
