//go:build !linux

package fakesrv

import (
	"net"
	"time"
)

// drained waits a moment: no send-queue query here.
func drained(_ *net.TCPConn, within time.Duration) { time.Sleep(min(within, 10*time.Millisecond)) }
