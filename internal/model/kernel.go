package model

import (
	"time"
)

const (
	// SYNRetries is net.ipv4.tcp_syn_retries.
	SYNRetries = 6
	// SYNLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts: SYN retransmissions at a fixed
	// SYNInitialRTO before the exponential ones (Linux 6.5 on).
	SYNLinearTimeouts = 4
	// SYNInitialRTO is TCP_TIMEOUT_INIT.
	SYNInitialRTO = time.Second
	// DataRetries is net.ipv4.tcp_retries2.
	DataRetries = 15
	// DataMinRTO and DataMaxRTO bound the data RTO (TCP_RTO_MIN/MAX).
	DataMinRTO = 200 * time.Millisecond
	DataMaxRTO = 120 * time.Second
)

// GiveUp sums retries+1 waits from rto, doubling, each capped at max (0: no cap).
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

// SYNGiveUp is how long a connect to a down host (no RST) lasts with no connect timeout, as
// documented: 127 s. Linux 6.5 on takes 131 s (docs/vanish.md).
const SYNGiveUp = 127 * time.Second

// DataGiveUp is how long a request on a silently dropped connection waits with no read timeout,
// as documented: 924.6 s.
const DataGiveUp = 924600 * time.Millisecond

// SYNGiveUpAfter is the documented give-up of a connect to a down host with retries SYN
// retransmissions: 2^(retries+1) - 1 s, Linux's budget (Kernel.SYNGiveUp is the real end).
func SYNGiveUpAfter(retries int) time.Duration {
	return GiveUp(SYNInitialRTO, DataMaxRTO, retries)
}

// DataGiveUpAfter is the documented give-up of a request to a vanished peer for tcp_retries2 =
// retries2; Linux's budget, checked at timer expiries (Kernel.DataGiveUp is the real end).
func DataGiveUpAfter(retries2 int) time.Duration {
	return GiveUp(DataMinRTO, DataMaxRTO, retries2)
}

// KeepaliveGiveUp is when keepalive ends an idle connection whose peer vanished, from the last
// segment: idle, then count probes interval apart, both rounded up to seconds as Go does.
func KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return wholeSeconds(idle) + time.Duration(count)*wholeSeconds(interval)
}

func wholeSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// Kernel is Linux as it runs: its methods replay the kernel's timers expiry by expiry
// (tcp_timer.c, timer.c; docs/vanish.md). The zero value is the documented rules.
type Kernel struct {
	// Tick is the jiffy: a timer fires on the timer wheel, late by its level's granularity.
	// Zero fires timers on time.
	Tick time.Duration `json:"tick"`
	// SYNLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts.
	SYNLinearTimeouts int `json:"synLinearTimeouts"`
	// RTO is the connection's RTO when the request is sent (tcpi_rto); zero: DataMinRTO.
	RTO time.Duration `json:"rto"`
	// TLP says a tail loss probe shifts every expiry by an RTO: Linux's default for a
	// one-segment request.
	TLP bool `json:"tlp"`
}

// SYNGiveUp is when a connect to a down host gives up with retries SYN retransmissions: at the
// first expiry with all retransmissions done or the budget tcp_model_timeout spent.
func (k Kernel) SYNGiveUp(retries int) time.Duration { return k.SYNGiveUpWindow(retries).Average }

// SYNGiveUpWindow is SYNGiveUp with the timer wheel's window.
func (k Kernel) SYNGiveUpWindow(retries int) Window {
	budget := SYNGiveUpAfter(retries)
	rto := SYNInitialRTO
	var w Window
	for n := 1; ; n++ {
		w = k.after(w, rto)
		if n-1 >= retries+k.SYNLinearTimeouts || (n-1 >= 1 && w.Average >= budget) {
			return w
		}
		if n > k.SYNLinearTimeouts {
			rto = min(2*rto, DataMaxRTO)
		}
	}
}

// DataGiveUp is when a request to a vanished peer gives up with tcp_retries2 = retries2: the
// budget counts from the first retransmission and is checked only at expiries.
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
	t += k.fire(rto)
	stamp := t
	for {
		rto = min(2*rto, DataMaxRTO)
		t += k.fire(rto)
		if t-stamp >= budget {
			return t
		}
	}
}

// DataGiveUps are the give-ups DataGiveUp's rule allows with each timer anywhere in its wheel
// level's lateness: one Window, or two on a knife edge.
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
	t = k.after(t, rto)
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

// KeepaliveGiveUp is model.KeepaliveGiveUp with each timer on the timer wheel.
func (k Kernel) KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return k.KeepaliveGiveUpWindow(idle, interval, count).Average
}

// KeepaliveGiveUpWindow is KeepaliveGiveUp with the timer wheel's window.
func (k Kernel) KeepaliveGiveUpWindow(idle, interval time.Duration, count int) Window {
	w := k.after(Window{}, wholeSeconds(idle))
	for range count {
		w = k.after(w, wholeSeconds(interval))
	}
	return w
}

// Window is when a chain of kernel timers ends: Average with every timer late by its level's
// average, Soonest by 1 tick, Latest by the whole granularity.
type Window struct {
	Soonest, Average, Latest time.Duration
}

// Shift moves w by d.
func (w Window) Shift(d time.Duration) Window {
	return Window{w.Soonest + d, w.Average + d, w.Latest + d}
}

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

// fireBounds is how long a kernel timer set d ahead takes to fire, soonest and latest.
func (k Kernel) fireBounds(d time.Duration) (soonest, latest time.Duration) {
	if k.Tick <= 0 {
		return d, d
	}
	ticks, gran := k.wheel(d)
	return (ticks + 1) * k.Tick, (ticks + gran) * k.Tick
}

// fire is how long a timer set d ahead takes to fire on average (calc_wheel_index).
func (k Kernel) fire(d time.Duration) time.Duration {
	if k.Tick <= 0 {
		return d
	}
	ticks, gran := k.wheel(d)
	return ticks*k.Tick + (gran+1)*k.Tick/2
}

// wheel returns d in whole ticks and its wheel level's granularity; k.Tick must be set.
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

// LoopbackKernel is Linux's defaults on a veth or loopback at HZ = 250, as exp-i measures it.
func LoopbackKernel() Kernel {
	return Kernel{Tick: DefaultTick, RTO: DataMinRTO + DefaultTick, TLP: true}
}
