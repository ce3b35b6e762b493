//go:build !linux

package noise

import "time"

// cpuMeter is not available off Linux.
type cpuMeter struct{}

func newCPUMeter() *cpuMeter                                     { return nil }
func (m *cpuMeter) sample(time.Time)                             {}
func (m *cpuMeter) over(time.Time, time.Time) (float64, float64) { return -1, -1 }
