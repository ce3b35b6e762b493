package fakesrv

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/accept"
)

// TLSLimits bound the connections of TLS fault listeners, so a listener left running holds none
// for ever.
type TLSLimits struct {
	// MaxDuration closes a connection this long after its accept.
	MaxDuration time.Duration
	// IdleTimeout closes a connection on which the client sent nothing for this long.
	IdleTimeout time.Duration
}

// DefaultTLSLimits are the limits WithLimits did not change: the max duration, for both.
var DefaultTLSLimits = TLSLimits{MaxDuration: DefaultMaxDuration, IdleTimeout: DefaultMaxDuration}

// WithLimits returns a copy of f whose listeners have limits l.
func (f *TLSFaults) WithLimits(l TLSLimits) (*TLSFaults, error) {
	if l.MaxDuration <= 0 || l.IdleTimeout <= 0 {
		return nil, fmt.Errorf("fakesrv: TLS limits must be positive, got max duration %v and idle timeout %v", l.MaxDuration, l.IdleTimeout)
	}
	g := *f
	g.limits = l
	return &g, nil
}

// stall accepts connections and reads from each, answering nothing, until the client leaves,
// idles out, or Close.
func (s *TLSFaultServer) stall(ln net.Listener, idle time.Duration) {
	defer s.wg.Done()
	for {
		c := accept.Next(ln, s.done)
		if c == nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			buf := make([]byte, 4096)
			for {
				_ = c.SetReadDeadline(time.Now().Add(idle))
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

type limitListener struct {
	net.Listener
	max time.Duration
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitConn{Conn: c}
	lc.timer = time.AfterFunc(l.max, func() { _ = c.Close() })
	return lc, nil
}

type limitConn struct {
	net.Conn
	timer *time.Timer
	once  sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.timer.Stop() })
	return c.Conn.Close()
}
