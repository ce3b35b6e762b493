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

// maxTick is Linux's longest jiffy (HZ = 100).
const maxTick = 10 * time.Millisecond

// kernelTick returns the jiffy, 1/CONFIG_HZ, from /proc/config.gz, else inferred from rto on a
// veth (TCP_RTO_MIN plus a tiny round trip, rounded up to a jiffy); 0 when neither works.
func kernelTick(rto time.Duration) time.Duration {
	if hz := configHZ(); hz > 0 {
		return time.Second / time.Duration(hz)
	}
	if d := rto - model.DataMinRTO; d > 0 && d <= maxTick {
		return d
	}
	return 0
}

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

// HostKernel returns the calling namespace's SYN rules for DialDown: its jiffy (0: unknown)
// and tcp_syn_linear_timeouts (0 before Linux 6.5).
func HostKernel() model.Kernel {
	k := model.Kernel{Tick: kernelTick(0)}
	if v, err := netns.ReadSysctl("net.ipv4.tcp_syn_linear_timeouts"); err == nil {
		k.SYNLinearTimeouts, _ = strconv.Atoi(v)
	}
	return k
}
