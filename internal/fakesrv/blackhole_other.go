//go:build !linux

package fakesrv

import "errors"

// Blackhole is a loopback TCP address that accepts no connection: SYNs to it go unanswered.
// It relies on how Linux drops SYNs to a listener whose accept queue is full; on other
// systems NewBlackhole returns an error.
type Blackhole struct {
	// Addr is the address, "127.0.0.3:41234".
	Addr string
	// Port is the port of Addr.
	Port int
}

// NewBlackhole returns an error: a blackhole needs Linux.
func NewBlackhole(ip string, port int) (*Blackhole, error) {
	return nil, errors.New("fakesrv: blackhole needs Linux")
}

// Close does nothing: no Blackhole is ever created on this system.
func (b *Blackhole) Close() error { return nil }
