//go:build linux

package noise

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// cpuEvery: /proc counts in 10 ms ticks.
const cpuEvery = 100 * time.Millisecond

// maxCPUSamples keeps an hour.
const maxCPUSamples = int(time.Hour / cpuEvery)

type cpuSample struct {
	at                      time.Time
	total, busy, steal, own uint64
}

// cpuMeter reads how busy labrun's CPUs are, and how much of it is labrun.
type cpuMeter struct {
	cpus map[string]bool // labrun's affinity mask

	mu      sync.Mutex
	last    time.Time
	samples []cpuSample
}

// newCPUMeter returns nil where the counters cannot be read.
func newCPUMeter() *cpuMeter {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	m := &cpuMeter{cpus: map[string]bool{}}
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			m.cpus["cpu"+strconv.Itoa(i)] = true
		}
	}
	if _, ok := m.read(time.Now()); !ok {
		return nil
	}
	return m
}

func (m *cpuMeter) sample(now time.Time) {
	m.mu.Lock()
	due := now.Sub(m.last) >= cpuEvery
	m.mu.Unlock()
	if !due {
		return
	}
	s, ok := m.read(now)
	if !ok {
		return
	}
	m.mu.Lock()
	m.last = now
	m.samples = append(m.samples, s)
	if len(m.samples) > maxCPUSamples {
		m.samples = append(m.samples[:0], m.samples[len(m.samples)-maxCPUSamples:]...)
	}
	m.mu.Unlock()
}

// read reads /proc/stat for the mask's CPUs and labrun's CPU time.
func (m *cpuMeter) read(now time.Time) (cpuSample, bool) {
	s := cpuSample{at: now}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, false
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !m.cpus[f[0]] {
			continue
		}
		var v [8]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		s.total += v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
		s.busy += v[0] + v[1] + v[2] + v[5] + v[6]
		s.steal += v[7]
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil || s.total == 0 {
		return s, false
	}
	// The command may hold spaces; the fields after ')' are fixed.
	rest := string(self[bytes.LastIndexByte(self, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, false
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	s.own = utime + stime
	return s, true
}

// over is the shares others used and the hypervisor stole; -1, -1 without two readings.
func (m *cpuMeter) over(from, to time.Time) (others, steal float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, b := -1, -1
	for i, s := range m.samples {
		if a < 0 && !s.at.Before(from.Add(-cpuEvery)) {
			a = i
		}
		if !s.at.After(to.Add(cpuEvery)) {
			b = i
		}
	}
	if a < 0 || b <= a {
		return -1, -1
	}
	x, y := m.samples[a], m.samples[b]
	total := float64(y.total - x.total)
	if total <= 0 {
		return -1, -1
	}
	busy := float64(y.busy-x.busy) - float64(y.own-x.own)
	return max(0, min(1, busy/total)), float64(y.steal-x.steal) / total
}
