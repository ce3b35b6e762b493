package model

import (
	"time"
)

const (
	// SYNRetries is net.ipv4.tcp_syn_retries.
	SYNRetries = 6
	// SYNLinearTimeouts: fixed-RTO SYN retransmissions before the exponential ones (Linux 6.5+).
	SYNLinearTimeouts = 4
	// SYNInitialRTO is TCP_TIMEOUT_INIT.
	SYNInitialRTO = time.Second
	// DataRetries is net.ipv4.tcp_retries2.
	DataRetries = 15
	// DataMinRTO and DataMaxRTO: TCP_RTO_MIN/MAX.
	DataMinRTO = 200 * time.Millisecond
	DataMaxRTO = 120 * time.Second
)

// GiveUp sums retries+1 doubling waits from rto, each capped at max (0: no cap).
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

// SYNGiveUp is the documented connect give-up to a down host (Linux 6.5+: 131 s).
const SYNGiveUp = 127 * time.Second

// DataGiveUp is a request on a silently dropped connection with no read timeout, as documented.
const DataGiveUp = 924600 * time.Millisecond

// SYNGiveUpAfter is the documented budget for retries SYN retransmissions: 2^(retries+1) - 1 s.
func SYNGiveUpAfter(retries int) time.Duration {
	return GiveUp(SYNInitialRTO, DataMaxRTO, retries)
}

// DataGiveUpAfter is the documented budget for tcp_retries2.
func DataGiveUpAfter(retries2 int) time.Duration {
	return GiveUp(DataMinRTO, DataMaxRTO, retries2)
}

// KeepaliveGiveUp is when keepalive drops a vanished peer: idle, then count probes interval
// apart, in whole seconds as Go rounds.
func KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return wholeSeconds(idle) + time.Duration(count)*wholeSeconds(interval)
}

func wholeSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// Kernel replays Linux's timers expiry by expiry (tcp_timer.c, timer.c); the zero value is the
// documented rules.
type Kernel struct {
	// Tick is the jiffy; timers fire late by their wheel level's granularity (0: on time).
	Tick              time.Duration `json:"tick"`
	SYNLinearTimeouts int           `json:"synLinearTimeouts"`
	// RTO is tcpi_rto at the send (0: DataMinRTO).
	RTO time.Duration `json:"rto"`
	// TLP: a tail loss probe shifts every expiry by an RTO.
	TLP bool `json:"tlp"`
}

// SYNGiveUp is the first expiry with all retransmissions done or the budget spent.
func (k Kernel) SYNGiveUp(retries int) time.Duration { return k.SYNGiveUpWindow(retries).Average }

// SYNGiveUpWindow is SYNGiveUp's timer-wheel window.
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

// DataGiveUp counts the budget from the first retransmission, checked at expiries.
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

// DataGiveUps are DataGiveUp's possible ends: one Window, or two on a knife edge.
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

// KeepaliveGiveUp is the package's KeepaliveGiveUp on the timer wheel.
func (k Kernel) KeepaliveGiveUp(idle, interval time.Duration, count int) time.Duration {
	return k.KeepaliveGiveUpWindow(idle, interval, count).Average
}

// KeepaliveGiveUpWindow is its window.
func (k Kernel) KeepaliveGiveUpWindow(idle, interval time.Duration, count int) Window {
	w := k.after(Window{}, wholeSeconds(idle))
	for range count {
		w = k.after(w, wholeSeconds(interval))
	}
	return w
}

// Window is a timer chain's end, each timer late by 1 tick, its level's average or its whole
// granularity.
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

// Timer wheel geometry (kernel/time/timer.c).
const (
	wheelLevelShift = 3
	wheelBuckets    = 64
	wheelLevels     = 9
)

func (k Kernel) fireBounds(d time.Duration) (soonest, latest time.Duration) {
	if k.Tick <= 0 {
		return d, d
	}
	ticks, gran := k.wheel(d)
	return (ticks + 1) * k.Tick, (ticks + gran) * k.Tick
}

// fire is the average (calc_wheel_index).
func (k Kernel) fire(d time.Duration) time.Duration {
	if k.Tick <= 0 {
		return d
	}
	ticks, gran := k.wheel(d)
	return ticks*k.Tick + (gran+1)*k.Tick/2
}

// wheel returns d in ticks and its level's granularity; k.Tick must be set.
func (k Kernel) wheel(d time.Duration) (ticks, gran time.Duration) {
	ticks = (d + k.Tick - 1) / k.Tick
	level := 0
	for start := time.Duration(wheelBuckets - 1); ticks >= start && level < wheelLevels-1; start <<= wheelLevelShift {
		level++
	}
	return ticks, time.Duration(1) << (wheelLevelShift * level)
}

// DefaultTick is the jiffy at CONFIG_HZ = 250.
const DefaultTick = 4 * time.Millisecond

// LoopbackKernel is Linux's defaults on a veth or loopback at HZ = 250.
func LoopbackKernel() Kernel {
	return Kernel{Tick: DefaultTick, RTO: DataMinRTO + DefaultTick, TLP: true}
}
