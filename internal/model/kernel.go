package model

import (
	"time"
)

// Linux's retransmission rules, for the kernel give-up times.
const (
	// SYNRetries is net.ipv4.tcp_syn_retries.
	SYNRetries = 6
	// SYNLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts since Linux 6.5: that many SYN
	// retransmissions more, each after a fixed SYNInitialRTO, before the exponential ones.
	// Linux before 6.5 has none (0).
	SYNLinearTimeouts = 4
	// SYNInitialRTO is the first SYN retransmission timeout (TCP_TIMEOUT_INIT).
	SYNInitialRTO = time.Second
	// DataRetries is net.ipv4.tcp_retries2.
	DataRetries = 15
	// DataMinRTO and DataMaxRTO bound the data retransmission timeout (TCP_RTO_MIN/MAX).
	DataMinRTO = 200 * time.Millisecond
	DataMaxRTO = 120 * time.Second
)

// GiveUp returns how long the kernel keeps retransmitting before it gives up: the first
// timeout rto, doubling after each of the retries retransmissions, each capped at max
// (0 = no cap), summed over the retries+1 waits.
func GiveUp(rto, max time.Duration, retries int) time.Duration {
	var total time.Duration
	for i := 0; i <= retries; i++ {
		if max > 0 && rto > max {
			rto = max
		}
		total += rto
		rto *= 2
	}
	return total
}

// SYNGiveUp is how long a connect to a host that is down (no RST) lasts with no connect
// timeout, as documented: 1+2+4+8+16+32+64 = 127 s, SYNGiveUpAfter(SYNRetries) (a test
// checks). Linux 6.5 and later take 131 s: Kernel{SYNLinearTimeouts: 4}.SYNGiveUp(6).
const SYNGiveUp = 127 * time.Second

// DataGiveUp is how long a request on a silently dropped connection waits with no read
// timeout, as documented: 924.6 s, DataGiveUpAfter(DataRetries) (a test checks).
const DataGiveUp = 924600 * time.Millisecond

// SYNGiveUpAfter is the documented give-up time of a connect to a host that is down with
// retries SYN retransmissions (tcp_syn_retries or the socket's TCP_SYNCNT): 2^(retries+1) - 1
// seconds, 3 s for 1 and 7 s for 2. It is also tcp_model_timeout(retries, 1 s), the time
// budget Linux gives a connect; Kernel.SYNGiveUp says when Linux really gives up.
func SYNGiveUpAfter(retries int) time.Duration {
	return GiveUp(SYNInitialRTO, DataMaxRTO, retries)
}

// DataGiveUpAfter is the documented give-up time of a request on a connection whose peer
// vanished, for tcp_retries2 = retries2: the sum of retries2+1 timeouts from TCP_RTO_MIN,
// doubling, capped at TCP_RTO_MAX: 0.2 x (2^4 - 1) = 3.0 s for 3, 924.6 s for 15.
//
// In Linux it is the budget, not the give-up time: tcp_model_timeout() in
// net/ipv4/tcp_timer.c computes exactly this, ((2 << r) - 1) x TCP_RTO_MIN up to
// r = ilog2(TCP_RTO_MAX / TCP_RTO_MIN) = 9 and TCP_RTO_MAX per retransmission beyond, and the
// connection gives up at the first timer expiry that finds the budget spent since its first
// retransmission. Kernel.DataGiveUp says when that is.
func DataGiveUpAfter(retries2 int) time.Duration {
	return GiveUp(DataMinRTO, DataMaxRTO, retries2)
}

// KeepaliveGiveUp is when TCP keepalive ends an idle connection whose peer vanished, counted
// from the last segment received: after idle the kernel sends a probe, then one every
// interval, and after count unanswered probes it resets the connection (ETIMEDOUT). The
// kernel holds idle and interval in whole seconds (TCP_KEEPIDLE, TCP_KEEPINTVL), and Go's
// net.KeepAliveConfig rounds them up, so this does too: 200 ms counts as 1 s. tcp_retries2
// plays no part: the keepalive timer runs only while no data is in flight.
func KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return wholeSeconds(idle) + time.Duration(count)*wholeSeconds(interval)
}

// wholeSeconds rounds d up to whole seconds, as Go does for TCP_KEEPIDLE and TCP_KEEPINTVL.
func wholeSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// Kernel is Linux as it runs, for the give-up times a measurement sees; its zero value is the
// documented rules with timers that fire on time. Its methods replay the kernel's timers one
// expiry after another, following net/ipv4/tcp_timer.c (tcp_retransmit_timer,
// tcp_write_timeout, retransmits_timed_out, tcp_model_timeout, tcp_keepalive_timer) and the
// timer wheel of kernel/time/timer.c.
type Kernel struct {
	// Tick is the kernel's jiffy, 1/CONFIG_HZ (4 ms at HZ = 250). With a Tick, a timer set d
	// ahead fires on the timer wheel: d in whole ticks, rounded up past the granularity of its
	// wheel level (1 tick below 63 ticks ahead, 8 below 504, 64 below 4032, ...), so late by
	// (granularity + 1)/2 ticks on average: 1 tick, 4.5 ticks from 252 ms at HZ = 250, 32.5
	// ticks from 2.016 s. Zero: timers fire on time.
	Tick time.Duration `json:"tick"`
	// SYNLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts (SYNLinearTimeouts since Linux
	// 6.5; 0 before).
	SYNLinearTimeouts int `json:"synLinearTimeouts"`
	// RTO is the connection's retransmission timeout when the request is sent (tcpi_rto):
	// TCP_RTO_MIN plus the smoothed RTT, rounded up to a tick, 204 ms on a veth at HZ = 250.
	// Zero means DataMinRTO.
	RTO time.Duration `json:"rto"`
	// TLP means a tail loss probe goes first, one RTO after the request, and the
	// retransmission timer is then armed for a full RTO after it, so every expiry comes one
	// RTO later. That is Linux's default (tcp_early_retrans 3, SACK on) for a request of one
	// segment: tcp_schedule_loss_probe() waits 2 x SRTT + TCP_RTO_MIN, capped at the RTO.
	// With two segments or more in flight the probe goes after 2 x SRTT + 2 ms and shifts
	// nothing: set TLP false for them.
	TLP bool `json:"tlp"`
}

// SYNGiveUp is when a connect to a host that is down gives up with retries SYN
// retransmissions (tcp_syn_retries or TCP_SYNCNT). In SYN_SENT, tcp_write_timeout() gives up
// at the first expiry of the SYN timer that finds either
//
//   - retries + SYNLinearTimeouts retransmissions done, or
//   - retransmits_timed_out(): at least one retransmission done and the time since the SYN
//     at least tcp_model_timeout(retries, 1 s), 2^(retries+1) - 1 seconds;
//
// and tcp_retransmit_timer() doubles the timeout only once more than SYNLinearTimeouts
// timeouts have passed. With linear timeouts the time budget ends it for small counts: 1
// retry gives up at 3 s (expiries at 1, 2, 3 s), 2 at 7 s (1, 2, 3, 4, 5, 7 s), just as
// without them; 6 (the default) gives up at 131 s (1+1+1+1+1+2+...+64: the budget of 127 s
// falls between the expiries at 67 and 131 s), where the documented rule says 127 s.
func (k Kernel) SYNGiveUp(retries int) time.Duration { return k.SYNGiveUpWindow(retries).Average }

// SYNGiveUpWindow is SYNGiveUp with the window the timer wheel allows around it (Window).
func (k Kernel) SYNGiveUpWindow(retries int) Window {
	budget := SYNGiveUpAfter(retries)
	rto := SYNInitialRTO
	var w Window
	for n := 1; ; n++ { // the n-th expiry, n-1 retransmissions done
		w = k.after(w, rto)
		if n-1 >= retries+k.SYNLinearTimeouts || (n-1 >= 1 && w.Average >= budget) {
			return w
		}
		if n > k.SYNLinearTimeouts {
			rto = min(2*rto, DataMaxRTO)
		}
	}
}

// DataGiveUp is when a request on a connection whose peer vanished gives up, with
// tcp_retries2 = retries2. The rule (net/ipv4/tcp_timer.c):
//
//   - the retransmission timer expires after RTO, then after twice as long each time
//     (tcp_retransmit_timer), capped at TCP_RTO_MAX; a tail loss probe first shifts every
//     expiry by one RTO (tcp_send_loss_probe re-arms the timer for a full RTO);
//   - tcp_retransmit_skb() saves retrans_stamp at the first retransmission by that timer,
//     not when the request was sent;
//   - at each later expiry, tcp_write_timeout() gives up when retransmits_timed_out() finds
//     now - retrans_stamp >= tcp_model_timeout(retries2, TCP_RTO_MIN), DataGiveUpAfter.
//
// So the budget counts from the first retransmission and is checked only at expiries: with an
// RTO of 204 ms and a TLP, tcp_retries2 = 3 (budget 3.0 s) does not give up at 16 x 204 ms
// (14 x 204 ms = 2.856 s spent) but at 32 x 204 ms = 6.528 s, plus the timer wheel's lateness.
// The decision uses the wheel's average lateness; where the budget falls within the lateness
// of the expiry (tcp_retries2 = 4 at HZ = 250: 6.12 s + 0.18 s on average against 6.2 s), a
// run can give up one expiry later, at twice the time.
func (k Kernel) DataGiveUp(retries2 int) time.Duration {
	rto := k.RTO
	if rto <= 0 {
		rto = DataMinRTO
	}
	budget := DataGiveUpAfter(retries2)
	var t time.Duration
	if k.TLP {
		t += k.fire(rto)
	}
	t += k.fire(rto) // the first expiry: the first retransmission
	stamp := t
	for {
		rto = min(2*rto, DataMaxRTO)
		t += k.fire(rto)
		if t-stamp >= budget {
			return t
		}
	}
}

// DataGiveUps are the give-ups DataGiveUp's rule allows when each timer fires anywhere within
// its wheel level's lateness instead of on its average, one Window for each expiry at which
// the budget check can pass first: one, the expiry of DataGiveUp, except on a knife edge,
// where the budget falls within the lateness of an expiry. tcp_retries2 = 4 on a veth at
// HZ = 250 is one: at the sixth expiry 6.12 s plus 16 to 352 ms of lateness are spent,
// against a budget of 6.2 s, so a run gives up there (6.72 s on average) or at the next
// expiry (13.38 s). With no Tick there is one window, of no width.
func (k Kernel) DataGiveUps(retries2 int) []Window {
	rto := k.RTO
	if rto <= 0 {
		rto = DataMinRTO
	}
	budget := DataGiveUpAfter(retries2)
	var t Window
	if k.TLP {
		t = k.after(t, rto)
	}
	t = k.after(t, rto) // the first retransmission: the budget counts from here
	var spent Window
	var out []Window
	for {
		rto = min(2*rto, DataMaxRTO)
		t, spent = k.after(t, rto), k.after(spent, rto)
		if spent.Latest >= budget {
			out = append(out, t)
		}
		if spent.Soonest >= budget {
			return out
		}
	}
}

// KeepaliveGiveUp is when keepalive ends an idle connection whose peer vanished, from the last
// segment received: model.KeepaliveGiveUp, each of the count+1 timers on the timer wheel.
func (k Kernel) KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return k.KeepaliveGiveUpWindow(idle, interval, count).Average
}

// KeepaliveGiveUpWindow is KeepaliveGiveUp with the window the timer wheel allows around it.
func (k Kernel) KeepaliveGiveUpWindow(idle, interval time.Duration, count int) Window {
	w := k.after(Window{}, wholeSeconds(idle))
	for range count {
		w = k.after(w, wholeSeconds(interval))
	}
	return w
}

// Window is when a chain of kernel timers ends: Average with every timer late by its wheel
// level's average, as Kernel's give-up times count them; Soonest and Latest with every timer
// late by 1 tick, or by its level's whole granularity. On a veth at HZ = 250 a chain whose last
// timer is 2.016 s or more ahead (level 2: 64 ticks of 4 ms) spans about a quarter of a second.
type Window struct {
	Soonest, Average, Latest time.Duration
}

// Shift moves w by d: the window of a call that goes on for d after the kernel gave up.
func (w Window) Shift(d time.Duration) Window {
	return Window{w.Soonest + d, w.Average + d, w.Latest + d}
}

// after is w followed by a timer set d ahead.
func (k Kernel) after(w Window, d time.Duration) Window {
	lo, hi := k.fireBounds(d)
	return Window{w.Soonest + lo, w.Average + k.fire(d), w.Latest + hi}
}

// Timer wheel geometry (kernel/time/timer.c): 64 buckets a level, each level 8 times coarser.
const (
	wheelLevelShift = 3
	wheelBuckets    = 64
	wheelLevels     = 9
)

// fireBounds is how long a kernel timer set d ahead takes to fire at the soonest and at the
// latest: d in whole ticks plus 1 tick, or plus its wheel level's granularity.
func (k Kernel) fireBounds(d time.Duration) (soonest, latest time.Duration) {
	if k.Tick <= 0 {
		return d, d
	}
	ticks, gran := k.wheel(d)
	return (ticks + 1) * k.Tick, (ticks + gran) * k.Tick
}

// fire is how long a kernel timer set d ahead takes to fire: d in whole ticks, plus the
// average rounding of the timer wheel. calc_wheel_index() puts a timer due in delta ticks on
// the first level whose start, LVL_START(n) = 63 << 3(n-1), is above delta, and calc_index()
// rounds its expiry up to the next multiple of that level's granularity, strictly after it.
func (k Kernel) fire(d time.Duration) time.Duration {
	if k.Tick <= 0 {
		return d
	}
	ticks, gran := k.wheel(d)
	return ticks*k.Tick + (gran+1)*k.Tick/2
}

// wheel returns a timer set d ahead in whole ticks, and the granularity in ticks of the wheel
// level it lands on. k.Tick must be set.
func (k Kernel) wheel(d time.Duration) (ticks, gran time.Duration) {
	ticks = (d + k.Tick - 1) / k.Tick
	level := 0
	for start := time.Duration(wheelBuckets - 1); ticks >= start && level < wheelLevels-1; start <<= wheelLevelShift {
		level++
	}
	return ticks, time.Duration(1) << (wheelLevelShift * level)
}

// DefaultTick is the jiffy of CONFIG_HZ = 250, the usual distribution kernel's.
const DefaultTick = 4 * time.Millisecond

// LoopbackKernel is Linux with its defaults on a path whose round trip is far below a jiffy
// (a veth, loopback) at HZ = 250, as exp-i measures it: an RTO of TCP_RTO_MIN plus one tick
// (204 ms), a tail loss probe before the first RTO (tcp_early_retrans 3, SACK on, a request
// of one segment), and SYN retransmissions on the documented schedule (tcp_syn_linear_timeouts
// 0, as exp-i sets it in its namespaces). labrun predict's --syn-retries and --tcp-retries2
// use it.
func LoopbackKernel() Kernel {
	return Kernel{Tick: DefaultTick, RTO: DataMinRTO + DefaultTick, TLP: true}
}
