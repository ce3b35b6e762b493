package model

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func TestGiveUp(t *testing.T) {
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		// 1+2+4+8+16+32+64 s: the first SYN waits 1 s, each of the 6 retries doubles it.
		{"syn", GiveUp(SYNInitialRTO, 0, SYNRetries), SYNGiveUp},
		// 0.2+0.4+...+102.4 = 204.6 s for the first ten waits, then six waits capped at 120 s.
		{"data", GiveUp(DataMinRTO, DataMaxRTO, DataRetries), DataGiveUp},
		{"syn constant", SYNGiveUp, 127 * time.Second},
		{"data constant", DataGiveUp, 924600 * ms},
		{"no retries", GiveUp(time.Second, 0, 0), time.Second},
		{"cap from the start", GiveUp(3*time.Second, time.Second, 2), 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestDocumentedKernel checks the documented formulas: 2^(n+1) - 1 s for n SYN retries, the
// sum of r+1 RTOs from 200 ms for tcp_retries2 = r, and idle + count x interval for keepalive.
func TestDocumentedKernel(t *testing.T) {
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"syn default", SYNGiveUpAfter(SYNRetries), 127 * time.Second},
		{"syn 1", SYNGiveUpAfter(1), 3 * time.Second},
		{"syn 2", SYNGiveUpAfter(2), 7 * time.Second},
		// 64 s doubles to 128 s but is capped at TCP_RTO_MAX: 127 + 120 s.
		{"syn 7 capped", SYNGiveUpAfter(7), 247 * time.Second},
		{"data default", DataGiveUpAfter(DataRetries), 924600 * ms},
		// 0.2 x (1+2+4+8) s.
		{"data 3", DataGiveUpAfter(3), 3 * time.Second},
		// 0.2 x (1+2+4+8+16) s.
		{"data 4", DataGiveUpAfter(4), 6200 * ms},
		// tcp_model_timeout's linear_backoff_thresh is ilog2(120 / 0.2) = 9: up to 9 the
		// budget is (2^(r+1) - 1) x 200 ms, beyond it 120 s a retransmission.
		{"data 9", DataGiveUpAfter(9), 204600 * ms},
		{"data 10", DataGiveUpAfter(10), 324600 * ms},
		{"keepalive Go default", KeepaliveGiveUp(15*time.Second, 15*time.Second, 9), 150 * time.Second},
		{"keepalive scaled", KeepaliveGiveUp(time.Second, time.Second, 3), 4 * time.Second},
		// TCP_KEEPIDLE and TCP_KEEPINTVL are whole seconds; Go rounds up.
		{"keepalive sub-second", KeepaliveGiveUp(200*ms, 200*ms, 3), 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestKernel checks Kernel's replay of the timers. Each want is derived in its comment.
func TestKernel(t *testing.T) {
	const tick = 4 * ms // HZ = 250
	linear := Kernel{SYNLinearTimeouts: SYNLinearTimeouts}
	veth := Kernel{RTO: 204 * ms, TLP: true}
	vethHZ := Kernel{Tick: tick, RTO: 204 * ms, TLP: true}
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		// The zero Kernel is the documented rules for SYNs.
		{"syn zero kernel", Kernel{}.SYNGiveUp(SYNRetries), SYNGiveUp},
		// Linux 6.5+: expiries at 1, 2, 3, 4, 5 s (4 linear timeouts and the first), then
		// 7, 11, 19, 35, 67, 131 s; the budget (127 s) is spent between 67 and 131 s, and the
		// tenth retransmission (6 + 4) was the last one allowed: 131 s.
		{"syn default linear", linear.SYNGiveUp(SYNRetries), 131 * time.Second},
		// TCP_SYNCNT 1: expiries at 1, 2, 3 s; at 3 s the budget of 3 s is spent, before the
		// count of 1 + 4 retransmissions would end it (at 7 s).
		{"syn 1 linear", linear.SYNGiveUp(1), 3 * time.Second},
		// TCP_SYNCNT 2: expiries at 1, 2, 3, 4, 5, 7 s; the budget of 7 s ends it at 7 s.
		{"syn 2 linear", linear.SYNGiveUp(2), 7 * time.Second},
		// TCP_SYNCNT 1 with a huge linear count: still the budget, 3 s.
		{"syn 1 linear 100", Kernel{SYNLinearTimeouts: 100}.SYNGiveUp(1), 3 * time.Second},
		// On the wheel at HZ = 250: 1 s is 250 ticks (level 1, +4.5 ticks), 2 s is 500
		// (level 1), 4 s is 1000 (level 2, +32.5 ticks): 1 s + 2 s + 2 x 18 ms = 3.036 s.
		{"syn 1 wheel", Kernel{Tick: tick}.SYNGiveUp(1), 3036 * ms},
		{"syn 2 wheel", Kernel{Tick: tick}.SYNGiveUp(2), 7000*ms + 18*ms + 18*ms + 130*ms},

		// With no TLP and an RTO of 200 ms, expiries come at 0.2, 0.6, 1.4, 3.0, 6.2 s; the
		// first retransmission (0.2 s) starts the budget. r = 3 (budget 3.0 s): at 3.0 s
		// only 2.8 s are spent, so it gives up at 6.2 s.
		{"data 3 on time", Kernel{}.DataGiveUp(3), 6200 * ms},
		// r = 0 (budget 0.2 s): at the second expiry, 0.6 s.
		{"data 0 on time", Kernel{}.DataGiveUp(0), 600 * ms},
		// r = 2 (budget 1.4 s): at 1.4 s only 1.2 s are spent; at 3.0 s, 2.8 s: 3.0 s.
		{"data 2 on time", Kernel{}.DataGiveUp(2), 3 * time.Second},
		// With a TLP every expiry is one RTO later: 0.408, 0.816, 1.632, 3.264, 6.528 s for an
		// RTO of 204 ms; the budget starts at 0.408 s. r = 3: 2.856 s spent at 3.264 s, so
		// 6.528 s; r = 4 (budget 6.2 s): 6.12 s spent at 6.528 s, so 13.056 s.
		{"data 3 veth", veth.DataGiveUp(3), 6528 * ms},
		{"data 4 veth", veth.DataGiveUp(4), 13056 * ms},
		{"data 2 veth", veth.DataGiveUp(2), 3264 * ms},
		// On the wheel at HZ = 250: the TLP and the first RTO (51 ticks, level 0) fire 1 tick
		// late, the next three (102, 204, 408 ticks, level 1) 4.5 ticks, 816 ticks (level
		// 2) 32.5 ticks. r = 3: 6.528 s + (1+1+4.5+4.5+4.5+32.5) ticks = 6.72 s.
		{"data 3 veth wheel", vethHZ.DataGiveUp(3), 6528*ms + 48*tick},
		// r = 4: at the fifth expiry 6.12 s + 46 ticks = 6.304 s are spent, over 6.2 s: the
		// lateness decides, and it gives up then too.
		{"data 4 veth wheel", vethHZ.DataGiveUp(4), 6528*ms + 48*tick},
		// r = 15: the budget is 924.6 s. The first retransmission is at 2 x 204 ms, then the
		// RTO doubles from 408 ms to 104.448 s (nine expiries, 204 ms x (2^10 - 2) = 208.488 s
		// spent) and stays at 120 s: 208.488 + 120 k >= 924.6 for k = 6. It gives up at
		// 204 ms x 2^10 + 720 s = 928.896 s.
		{"data 15 veth", veth.DataGiveUp(15), 204*ms*1024 + 720*time.Second},
		// Zero RTO means TCP_RTO_MIN.
		{"data zero rto", Kernel{RTO: 0}.DataGiveUp(3), Kernel{RTO: DataMinRTO}.DataGiveUp(3)},

		{"keepalive on time", Kernel{}.KeepaliveGiveUp(time.Second, time.Second, 3), 4 * time.Second},
		// Four timers of 250 ticks (level 1): 4 s + 4 x 18 ms.
		{"keepalive wheel", Kernel{Tick: tick}.KeepaliveGiveUp(time.Second, time.Second, 3), 4072 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestFire checks the timer wheel's levels at their boundaries: LVL_START(1) = 63 ticks,
// LVL_START(2) = 504.
func TestFire(t *testing.T) {
	k := Kernel{Tick: ms} // HZ = 1000, so ticks are milliseconds
	tests := []struct {
		d, want time.Duration
	}{
		{62 * ms, 63 * ms},                          // level 0: one tick late
		{63 * ms, 63*ms + 4500*time.Microsecond},    // level 1: 4.5 ticks late on average
		{503 * ms, 503*ms + 4500*time.Microsecond},  //
		{504 * ms, 504*ms + 32500*time.Microsecond}, // level 2: 32.5 ticks
		{1500 * time.Microsecond, 2*ms + ms},        // rounded up to whole ticks first
	}
	for _, tt := range tests {
		if got := k.fire(tt.d); got != tt.want {
			t.Errorf("fire(%v): got %v, want %v", tt.d, got, tt.want)
		}
	}
}

// The documented give-up times are the budgets; a connection on a veth (RTO 204 ms, with a
// tail loss probe) gives up later, at a timer expiry.
func ExampleKernel() {
	veth := Kernel{RTO: 204 * time.Millisecond, TLP: true}
	fmt.Println(DataGiveUpAfter(3), veth.DataGiveUp(3))
	fmt.Println(SYNGiveUpAfter(6), Kernel{SYNLinearTimeouts: SYNLinearTimeouts}.SYNGiveUp(6))
	// Output:
	// 3s 6.528s
	// 2m7s 2m11s
}

// TestPredictGiveUpIsPredict: with the documented give-up times, the kernel's Predict replays
// exactly what Predict says, over a grid of profiles, limits and downstreams.
func TestPredictGiveUpIsPredict(t *testing.T) {
	downs := map[string]Downstream{
		"host down":            {HostDown: true},
		"dropped":              {Dropped: true},
		"dropped, slow server": {Dropped: true, Delay: 100 * ms},
		"dropped, idempotent":  {Dropped: true, Delay: 100 * ms, Idempotent: true},
		"dropped, stall":       {Dropped: true, Stall: true},
	}
	n := 0
	for dname, d := range downs {
		for _, prof := range []Profile{HC5, OkHttp, Go} {
			for _, ct := range []time.Duration{0, time.Second, 200 * time.Second} {
				for _, rt := range []time.Duration{0, 250 * ms, 1000 * time.Second} {
					for _, dl := range []time.Duration{0, time.Second, 130 * time.Second, 2000 * time.Second} {
						for _, retries := range []int{0, 2} {
							for _, backoff := range []time.Duration{0, 100 * ms} {
								for _, queue := range []time.Duration{0, 50 * ms} {
									l := Limits{Rules: prof, ConnectTimeout: ct, ReadTimeout: rt, Deadline: dl,
										Retries: retries, Backoff: backoff, LeaseTimeout: 20 * ms}
									cold := d.HostDown
									want := Predict(d, l, cold, queue)
									got := predictGiveUp(d, l, cold, queue, SYNGiveUp, DataGiveUp)
									n++
									if !reflect.DeepEqual(got, want) {
										t.Fatalf("%s, %+v, queue %v:\ngot  %+v\nwant %+v", dname, l, queue, got, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d scenarios", n)
}

// TestKernelPredict checks the scaled-down kernel's give-up times racing the client's limits.
// Each want is derived in its comment, from TestKernel's figures for LoopbackKernel.
func TestKernelPredict(t *testing.T) {
	k := LoopbackKernel()
	syn1 := 3036 * ms                 // TestKernel's "syn 1 wheel"
	data3 := 6528*ms + 48*DefaultTick // TestKernel's "data 3 veth wheel": 6.72 s
	tests := []struct {
		name     string
		d        Downstream
		l        Limits
		syn, r2  int
		outcome  vocab.Outcome
		total    time.Duration
		attempts int
		execs    int
	}{
		{"host down, syn 1", Downstream{HostDown: true}, Limits{}, 1, 0, vocab.KernelTimeout, syn1, 1, 0},
		{"host down, syn 1, connect timeout 1s", Downstream{HostDown: true}, Limits{ConnectTimeout: time.Second}, 1, 0, vocab.ConnectTimeout, time.Second, 1, 0},
		// Two attempts of 3.036 s each, 100 ms apart.
		{"host down, syn 1, a retry", Downstream{HostDown: true}, Limits{Retries: 1, Backoff: 100 * ms}, 1, 0, vocab.KernelTimeout, 2*syn1 + 100*ms, 2, 0},
		// The deadline cuts the retry: it starts at 3.036 s, the deadline fires at 4 s.
		{"host down, syn 1, a retry, deadline 4s", Downstream{HostDown: true}, Limits{Retries: 1, Deadline: 4 * time.Second}, 1, 0, vocab.Deadline, 4 * time.Second, 2, 0},
		// The backoff ends past the deadline: no second attempt.
		{"host down, syn 1, backoff past the deadline", Downstream{HostDown: true}, Limits{Retries: 1, Backoff: time.Second, Deadline: 3500 * ms}, 1, 0, vocab.Deadline, 3500 * ms, 1, 0},
		// The default count: the documented schedule on the wheel, past 127 s.
		{"host down, default", Downstream{HostDown: true}, Limits{}, SYNRetries, 0, vocab.KernelTimeout, k.SYNGiveUp(SYNRetries), 1, 0},
		{"dropped, r 3", Downstream{Dropped: true}, Limits{}, 0, 3, vocab.KernelTimeout, data3, 1, 0},
		{"dropped, r 3, read timeout 250ms", Downstream{Dropped: true}, Limits{ReadTimeout: 250 * ms}, 0, 3, vocab.ReadTimeout, 250 * ms, 1, 0},
		{"dropped, r 3, deadline 1s", Downstream{Dropped: true}, Limits{Deadline: time.Second}, 0, 3, vocab.Deadline, time.Second, 1, 0},
		// A read timeout longer than the kernel's give-up never fires.
		{"dropped, r 3, read timeout 10s", Downstream{Dropped: true}, Limits{ReadTimeout: 10 * time.Second}, 0, 3, vocab.KernelTimeout, data3, 1, 0},
		// The retry connects anew (1 ms) and the server answers after 100 ms: executed once.
		{"dropped, r 3, a retry", Downstream{Dropped: true, Delay: 100 * ms}, Limits{Retries: 1}, 0, 3, vocab.OK, data3 + ConnectTime + 100*ms, 2, 1},
		// A read timeout of 50 ms fires on the dead connection long before the kernel, and
		// again on the retry's new connection (50 + 1 + 50 ms), whose request was sent.
		{"dropped, r 3, a retry with a read timeout", Downstream{Dropped: true, Delay: 100 * ms}, Limits{Retries: 1, ReadTimeout: 50 * ms}, 0, 3, vocab.ReadTimeout, 101 * ms, 2, 1},
		// The retry starts at 6.72 s and would get its answer at 6.821 s: the deadline at
		// 6.8 s cuts it after its request was sent.
		{"dropped, r 3, a retry, deadline 6.8s", Downstream{Dropped: true, Delay: 100 * ms}, Limits{Retries: 1, Deadline: 6800 * ms}, 0, 3, vocab.Deadline, 6800 * ms, 2, 1},
		{"dropped, default", Downstream{Dropped: true}, Limits{}, 0, DataRetries, vocab.KernelTimeout, k.DataGiveUp(DataRetries), 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := k.Predict(tt.d, tt.l, tt.d.HostDown, 0, tt.syn, tt.r2)
			if got.Outcome != tt.outcome || got.Total != tt.total || len(got.Attempts) != tt.attempts || got.Executions != tt.execs {
				t.Errorf("got %s at %v, %d attempts, %d executions; want %s at %v, %d, %d",
					got.Outcome, got.Total, len(got.Attempts), got.Executions, tt.outcome, tt.total, tt.attempts, tt.execs)
			}
		})
	}
}

func TestHTTP2PingGiveUp(t *testing.T) {
	tests := []struct {
		sendPing, ping, want time.Duration
	}{
		{time.Second, 500 * ms, 1500 * ms},
		{time.Second, 0, 16 * time.Second}, // PingTimeout defaults to 15 s
		{0, time.Second, Forever},          // no health check
	}
	for _, tt := range tests {
		if got := HTTP2PingGiveUp(tt.sendPing, tt.ping); got != tt.want {
			t.Errorf("HTTP2PingGiveUp(%v, %v): got %v, want %v", tt.sendPing, tt.ping, got, tt.want)
		}
	}
}

func TestStaleCheckPasses(t *testing.T) {
	for gone, want := range map[PeerGone]bool{PeerClosed: false, PeerReset: false, PeerVanished: true} {
		if got := StaleCheckPasses(gone); got != want {
			t.Errorf("StaleCheckPasses(%d): got %v, want %v", gone, got, want)
		}
	}
}

// TestDataGiveUps: only a budget that falls within the wheel's lateness of an expiry lets a
// run give up at another expiry than DataGiveUp's.
func TestDataGiveUps(t *testing.T) {
	const tick = 4 * ms
	vethHZ := Kernel{Tick: tick, RTO: 204 * ms, TLP: true}
	// TestKernel's "data 3 veth wheel": the TLP and the first RTO on level 0 (1 tick late,
	// exactly), three timers on level 1 (1 to 8 ticks), the last on level 2 (1 to 64 ticks).
	data3 := Window{6528*ms + (1+1+1+1+1+1)*tick, 6528*ms + 48*tick, 6528*ms + (1+1+8+8+8+64)*tick}
	// One expiry later: 6.528 s more (1632 ticks, level 2).
	next := Window{data3.Soonest + 6528*ms + tick, data3.Average + 6528*ms + 130*ms, data3.Latest + 6528*ms + 64*tick}
	tests := []struct {
		name string
		k    Kernel
		r    int
		want []Window
	}{
		// r = 3: 2.856 s + 12 to 96 ms spent at the fifth expiry, short of 3.0 s: the sixth.
		{"r 3", vethHZ, 3, []Window{data3}},
		// r = 4: 6.12 s + 16 to 352 ms against 6.2 s: the sixth expiry or the seventh.
		{"r 4", vethHZ, 4, []Window{data3, next}},
		{"on time", Kernel{RTO: 204 * ms, TLP: true}, 4, []Window{{13056 * ms, 13056 * ms, 13056 * ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.k.DataGiveUps(tt.r)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if g := tt.k.DataGiveUp(tt.r); g != got[0].Average && g != got[len(got)-1].Average {
				t.Errorf("DataGiveUp %v is none of the windows' averages", g)
			}
		})
	}
}

func TestWindows(t *testing.T) {
	k := Kernel{Tick: 4 * ms}
	// TCP_SYNCNT 2: timers of 1 s and 2 s (level 1: 1 to 8 ticks late) and 4 s (level 2: 1 to
	// 64 ticks).
	if got, want := k.SYNGiveUpWindow(2), (Window{7*time.Second + 3*4*ms, k.SYNGiveUp(2), 7*time.Second + 80*4*ms}); got != want {
		t.Errorf("syn 2: got %v, want %v", got, want)
	}
	// Keepalive 1s/1s/3: four timers of 250 ticks (level 1).
	if got, want := k.KeepaliveGiveUpWindow(time.Second, time.Second, 3), (Window{4*time.Second + 4*4*ms, 4072 * ms, 4*time.Second + 32*4*ms}); got != want {
		t.Errorf("keepalive: got %v, want %v", got, want)
	}
	w := Window{time.Second, 1100 * ms, 1200 * ms}
	if got := w.Shift(time.Second); got != (Window{2 * time.Second, 2100 * ms, 2200 * ms}) {
		t.Errorf("Shift: got %v", got)
	}
}
