//go:build linux

package netns

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxSynCount is the largest TCP_SYNCNT Linux accepts.
const MaxSynCount = 127

// SynCount returns a net.Dialer Control function that sets the socket's own SYN retry count
// (TCP_SYNCNT) to n, in place of net.ipv4.tcp_syn_retries, before it connects. It needs no
// privileges and works in any namespace, the host's included: it changes one socket only.
//
// A connect to a host that is down then gives up after 2^(n+1) - 1 seconds (3 s for n = 1):
// the time budget Linux derives from n ends it, also on Linux 6.5 and later, whose first SYN
// retransmissions come at a fixed 1 s (net.ipv4.tcp_syn_linear_timeouts); model.Kernel's
// SYNGiveUp has the rule.
//
// SynCount panics if n is outside 1..MaxSynCount: that is a programmer's mistake.
func SynCount(n int) func(network, address string, c syscall.RawConn) error {
	if n < 1 || n > MaxSynCount {
		panic(fmt.Sprintf("netns: SynCount needs 1..%d, got %d", MaxSynCount, n))
	}
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SYNCNT, n)
		}); err != nil {
			return fmt.Errorf("netns: TCP_SYNCNT on %s: %w", address, err)
		}
		if serr != nil {
			return fmt.Errorf("netns: TCP_SYNCNT %d on %s: %w", n, address, serr)
		}
		return nil
	}
}
