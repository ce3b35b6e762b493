//go:build linux

package vanish

import (
	"bufio"
	"compress/gzip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// maxTick is the longest jiffy Linux has (HZ = 100).
const maxTick = 10 * time.Millisecond

// kernelTick returns the kernel's jiffy, 1/CONFIG_HZ, from /proc/config.gz when the kernel
// exposes its configuration. Otherwise it infers it from a connection's RTO on a path whose
// round trip is far below a jiffy (a veth): the RTO is TCP_RTO_MIN plus that round trip,
// rounded up to a whole jiffy, so one jiffy above TCP_RTO_MIN. It returns 0 when neither
// works, and the model then lets timers fire on time.
func kernelTick(rto time.Duration) time.Duration {
	if hz := configHZ(); hz > 0 {
		return time.Second / time.Duration(hz)
	}
	if d := rto - model.DataMinRTO; d > 0 && d <= maxTick {
		return d
	}
	return 0
}

// configHZ reads CONFIG_HZ from /proc/config.gz, 0 if it cannot.
func configHZ() int {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return 0
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return 0
	}
	defer z.Close()
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CONFIG_HZ="); ok {
			hz, err := strconv.Atoi(v)
			if err != nil || hz <= 0 {
				return 0
			}
			return hz
		}
	}
	return 0
}

// HostKernel returns the calling namespace's SYN rules, for DialDown's expected give-up
// times: its jiffy (0 when it cannot tell) and its net.ipv4.tcp_syn_linear_timeouts (0 before
// Linux 6.5, which has none). It reads and changes nothing else.
func HostKernel() model.Kernel {
	k := model.Kernel{Tick: kernelTick(0)}
	if v, err := netns.ReadSysctl("net.ipv4.tcp_syn_linear_timeouts"); err == nil {
		k.SYNLinearTimeouts, _ = strconv.Atoi(v)
	}
	return k
}
