//go:build linux

package netns

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxSynCount is the largest TCP_SYNCNT Linux accepts.
const MaxSynCount = 127

// SynCount returns a net.Dialer Control function setting the socket's TCP_SYNCNT to n, so a
// connect to a down host gives up after 2^(n+1) - 1 s. It panics if n is outside 1..MaxSynCount.
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
