//go:build linux

package fakesrv

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fillerTimeout bounds NewBlackhole's dial of its filler and its wait for the kernel to queue it.
const fillerTimeout = 5 * time.Second

// Blackhole is a loopback TCP address whose SYNs go unanswered, so a connect hangs until the
// client's timeout, as with a host that is down (a closed port refuses at once). Its methods
// are safe for concurrent use.
//
// It is a listening socket with a backlog of 0 that never accepts, its queue filled by one
// connection of its own; Linux then drops every further SYN. It needs no privileges and no
// firewall rule, and stays on the machine.
type Blackhole struct {
	// Addr is the IP given to NewBlackhole and the port bound.
	Addr string
	// Port is Addr's port, to bind the same port on another loopback IP.
	Port int

	closeOnce sync.Once
	closeErr  error
	fd        int      // the listening socket
	filler    net.Conn // the connection that fills fd's accept queue
}

// NewBlackhole binds ip (IPv4 in 127.0.0.0/8; "" is 127.0.0.1) on port (0: a free one), fills
// its accept queue and never accepts. The same port can be bound on several loopback IPs, as
// for a host name with several addresses. It refuses any other ip, ::1 and localhost included.
func NewBlackhole(ip string, port int) (*Blackhole, error) {
	if ip == "" {
		ip = "127.0.0.1"
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() || !a.IsLoopback() {
		return nil, fmt.Errorf("fakesrv: blackhole on %q: not an IPv4 address in 127.0.0.0/8", ip)
	}
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("fakesrv: blackhole port must be in 0..65535, got %d", port)
	}

	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: blackhole socket: %w", err)
	}
	b := &Blackhole{fd: fd}
	if err := b.listen(a, port); err != nil {
		_ = syscall.Close(fd) // the socket never served anything
		return nil, err
	}
	if err := b.fill(); err != nil {
		_ = b.Close() // releases the socket and a filler that dialled but was not seen queued
		return nil, err
	}
	return b, nil
}

func (b *Blackhole) listen(ip netip.Addr, port int) error {
	at := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	if err := syscall.SetsockoptInt(b.fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("fakesrv: blackhole on %s: set SO_REUSEADDR: %w", at, err)
	}
	if err := syscall.Bind(b.fd, &syscall.SockaddrInet4{Port: port, Addr: ip.As4()}); err != nil {
		return fmt.Errorf("fakesrv: blackhole bind %s: %w", at, err)
	}
	// A backlog of 0 still admits one connection: Linux counts the queue full past the backlog.
	if err := syscall.Listen(b.fd, 0); err != nil {
		return fmt.Errorf("fakesrv: blackhole listen on %s: %w", at, err)
	}
	sa, err := syscall.Getsockname(b.fd)
	if err != nil {
		return fmt.Errorf("fakesrv: blackhole on %s: getsockname: %w", at, err)
	}
	sa4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return fmt.Errorf("fakesrv: blackhole on %s: getsockname: unexpected address %T", at, sa)
	}
	b.Port = sa4.Port
	b.Addr = net.JoinHostPort(ip.String(), strconv.Itoa(sa4.Port))
	return nil
}

// fill dials b.Addr once and waits until the listener has queued that connection (it polls
// readable then): a SYN arriving before that would still be answered.
func (b *Blackhole) fill() error {
	d := net.Dialer{Timeout: fillerTimeout, KeepAlive: -1} // no keep-alive probes: it stays silent
	c, err := d.Dial("tcp4", b.Addr)
	if err != nil {
		return fmt.Errorf("fakesrv: blackhole on %s: filler connection: %w", b.Addr, err)
	}
	b.filler = c
	if err := waitReadable(b.fd, fillerTimeout); err != nil {
		return fmt.Errorf("fakesrv: blackhole on %s: filler connection not queued: %w", b.Addr, err)
	}
	return nil
}

// waitReadable waits up to timeout for fd to poll readable, with epoll: the syscall package has
// no poll(2) on every architecture, and the netpoller does not own this socket.
func waitReadable(fd int, timeout time.Duration) (err error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	defer func() {
		if cerr := syscall.Close(ep); cerr != nil && err == nil {
			err = fmt.Errorf("close epoll: %w", cerr)
		}
	}()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	deadline := time.Now().Add(timeout)
	events := make([]syscall.EpollEvent, 1)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not readable after %v", timeout)
		}
		n, err := syscall.EpollWait(ep, events, int(left.Milliseconds())+1)
		switch {
		case errors.Is(err, syscall.EINTR): // the runtime's preemption signals interrupt waits
			continue
		case err != nil:
			return fmt.Errorf("epoll_wait: %w", err)
		case n > 0:
			return nil
		}
	}
}

// Close closes the filler and the socket: a connect to Addr is then refused. Later calls return
// the first call's error.
func (b *Blackhole) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.filler != nil {
			if err := b.filler.Close(); err != nil {
				errs = append(errs, fmt.Errorf("fakesrv: blackhole %s: close filler: %w", b.Addr, err))
			}
		}
		if err := syscall.Close(b.fd); err != nil {
			errs = append(errs, fmt.Errorf("fakesrv: blackhole %s: close: %w", b.Addr, err))
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}
