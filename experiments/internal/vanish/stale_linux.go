//go:build linux

package vanish

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// StaleCheck is HttpClient 5's stale check (BHttpConnectionBase.isStale): a read that does not
// wait, stale on the peer's FIN or an error, healthy otherwise; it peeks, so nothing is lost.
// It is blind to a vanished peer: no FIN or RST ever comes (docs/vanish.md).
func StaleCheck(c syscall.Conn) (healthy bool, reason error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("stale check: %w", err)
	}
	var n int
	var rerr error
	buf := make([]byte, 1)
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true // one try, never waiting
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("stale check: %w", err)
	case errors.Is(rerr, unix.EAGAIN):
		return true, nil
	case rerr != nil:
		return false, rerr
	case n == 0:
		return false, io.EOF
	}
	return true, nil
}
