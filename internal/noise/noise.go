// Package noise measures how much the machine kept labrun from running, so a verdict can tell
// a late row the machine explains from one it does not. A Sentinel wakes every Tick and sums
// its lateness; it also reads the CPU others used and the hypervisor stole.
package noise

import (
	"sync"
	"time"
)

// Tick is the sentinel's period.
const Tick = time.Millisecond

// Floor is a wake-up's lateness on an idle machine (see internal/clock); below it is on time.
const Floor = time.Millisecond

const bucketSpan = 10 * time.Millisecond

// maxBuckets keeps an hour.
const maxBuckets = int(time.Hour / bucketSpan)

type bucket struct {
	n      int32
	excess time.Duration // above Floor
	max    time.Duration
}

// Sentinel samples its wake-ups' lateness until Stop; its methods are safe for concurrent use.
type Sentinel struct {
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	cpu   *cpuMeter // nil without /proc

	mu      sync.Mutex
	first   int // buckets[0]'s index from start
	buckets []bucket
}

// Start starts a sentinel.
func Start() *Sentinel {
	s := &Sentinel{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), cpu: newCPUMeter()}
	go s.loop()
	return s
}

// Stop ends the sampling; the samples stay readable.
func (s *Sentinel) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func (s *Sentinel) loop() {
	defer close(s.done)
	t := time.NewTimer(Tick)
	defer t.Stop()
	asked := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			woke := time.Now()
			s.record(woke, woke.Sub(asked)-Tick)
			if s.cpu != nil {
				s.cpu.sample(woke)
			}
			asked = time.Now()
			t.Reset(Tick)
		}
	}
}

func (s *Sentinel) record(at time.Time, late time.Duration) {
	i := int(at.Sub(s.start) / bucketSpan)
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.first+len(s.buckets) <= i {
		s.buckets = append(s.buckets, bucket{})
	}
	if len(s.buckets) > maxBuckets {
		drop := len(s.buckets) - maxBuckets
		s.buckets = append(s.buckets[:0], s.buckets[drop:]...)
		s.first += drop
	}
	if i < s.first {
		return
	}
	b := &s.buckets[i-s.first]
	b.n++
	if late > Floor {
		b.excess += late - Floor
	}
	b.max = max(b.max, late)
}

// Figure is the noise over a stretch of time.
type Figure struct {
	Wakeups int
	// Stolen is the lateness above Floor, summed.
	Stolen  time.Duration
	MaxLate time.Duration
	Span    time.Duration
	// OthersCPU and Steal: shares of labrun's CPUs others and the hypervisor took (-1: no /proc).
	OthersCPU, Steal float64
}

// Share is Stolen / Span.
func (f Figure) Share() float64 {
	if f.Span <= 0 {
		return 0
	}
	return min(1, float64(f.Stolen)/float64(f.Span))
}

// Over returns the noise from from to to.
func (s *Sentinel) Over(from, to time.Time) Figure {
	f := Figure{Span: to.Sub(from), OthersCPU: -1, Steal: -1}
	s.mu.Lock()
	lo, hi := s.index(from), s.index(to)
	for i := max(lo, 0); i <= hi; i++ {
		b := s.buckets[i]
		f.Wakeups += int(b.n)
		f.Stolen += b.excess
		f.MaxLate = max(f.MaxLate, b.max)
	}
	s.mu.Unlock()
	if s.cpu != nil {
		f.OthersCPU, f.Steal = s.cpu.over(from, to)
	}
	return f
}

// Worst is the most lateness above Floor in any span-long stretch of from..to.
func (s *Sentinel) Worst(from, to time.Time, span time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, hi := s.index(from), s.index(to)
	if lo < 0 {
		return 0
	}
	w := max(1, int((span+bucketSpan-1)/bucketSpan)) + 1 // a stretch straddles one more bucket
	var sum, worst time.Duration
	for i := lo; i <= hi; i++ {
		sum += s.buckets[i].excess
		if i-w >= lo {
			sum -= s.buckets[i-w].excess
		}
		worst = max(worst, sum)
	}
	return worst
}

// index is t's bucket, clamped, or -1; the caller holds mu.
func (s *Sentinel) index(t time.Time) int {
	if len(s.buckets) == 0 {
		return -1
	}
	i := int(t.Sub(s.start)/bucketSpan) - s.first
	return max(0, min(i, len(s.buckets)-1))
}
