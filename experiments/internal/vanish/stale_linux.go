//go:build linux

package vanish

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// StaleCheck is HttpClient 5's stale check (BHttpConnectionBase.isStale, which
// setValidateAfterInactivity runs on a connection idle for longer than that): a read that does
// not wait. It reports the connection healthy when there is nothing to read yet (or data is
// waiting), and stale, with the reason, when the read sees the peer's FIN (io.EOF) or an error
// such as a reset. The check peeks, so a healthy connection loses no byte.
//
// It is blind to a peer that vanished: no FIN, no RST ever arrives, so the connection looks
// exactly as healthy as a live idle one, and a request sent on it waits for the read timeout
// or, without one, for the kernel to give up (docs/vanish.md).
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
		return true // one try: the check never waits for the socket to become readable
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
