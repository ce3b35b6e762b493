package fakesrv

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// drained waits, at most within, until tc's send queue is empty (SIOCOUTQ).
func drained(tc *net.TCPConn, within time.Duration) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(time.Millisecond) {
		queued := 0
		_ = raw.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
		if queued == 0 {
			return
		}
	}
}
