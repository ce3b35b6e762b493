package model

import (
	"fmt"
	"testing"
	"time"
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
