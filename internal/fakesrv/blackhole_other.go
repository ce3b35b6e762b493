//go:build !linux

package fakesrv

import "errors"

// Blackhole needs Linux's way of dropping SYNs to a full accept queue; elsewhere NewBlackhole
// fails.
type Blackhole struct {
	Addr string
	Port int
}

func NewBlackhole(ip string, port int) (*Blackhole, error) {
	return nil, errors.New("fakesrv: blackhole needs Linux")
}

func (b *Blackhole) Close() error { return nil }
