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

// fillerTimeout bounds the two waits of NewBlackhole on its own filler connection: the dial,
// and the kernel queueing it on the listener. Both take microseconds on loopback.
const fillerTimeout = 5 * time.Second

// Blackhole is a loopback TCP address that accepts no connection: SYNs to it go unanswered,
// so a client's connect hangs until its own timeout, as with a host that is down. Unlike a
// closed port, which refuses at once, it makes the client spend its connect timeout. Create
// it with NewBlackhole and release it with Close. Its methods are safe for concurrent use.
//
// It needs no privileges and no firewall rule. It is a listening socket with a backlog of 0
// that is never accepted from, whose accept queue NewBlackhole fills with one connection of
// its own; Linux (with the default net.ipv4.tcp_abort_on_overflow=0) then drops every further
// SYN, and the client retransmits into the void. Designs considered and rejected: an
// unroutable address such as 10.255.255.1 leaves the machine and depends on the network; an
// iptables DROP rule needs root and outlives a crashed test.
//
// A net.Dialer walking the addresses of a host name gives each attempt the larger of an equal
// share of what remains of its timeout and 2 seconds, so a Go client gets past each blackhole
// in 2 seconds at best: with two blackholes before a listener it needs a timeout over 4s.
type Blackhole struct {
	// Addr is the address, "127.0.0.3:41234": the IP given to NewBlackhole and the port bound.
	Addr string
	// Port is the port of Addr, to bind the same port on another loopback IP.
	Port int

	closeOnce sync.Once
	closeErr  error
	fd        int      // the listening socket
	filler    net.Conn // the connection that fills fd's accept queue
}

// NewBlackhole binds ip (an IPv4 address in 127.0.0.0/8; "" means 127.0.0.1) on port (0 picks
// a free port), listens with a backlog of 0 and never accepts; it fills the accept queue
// itself so that every further SYN is dropped. Close releases the socket and the filler
// connection.
//
// The same port can be bound on several loopback IPs (127.0.0.2, 127.0.0.3, ...), as for a
// host name that resolves to several addresses, one port: distinct IPs do not conflict, and
// that needs no socket option. The socket sets SO_REUSEADDR anyway, as net.Listen does, so
// that a port whose earlier connections linger in TIME_WAIT can be bound again.
//
// NewBlackhole refuses any other ip, ::1 and "localhost" included, and a port outside
// 0..65535.
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

// listen binds b.fd to ip:port, listens with a backlog of 0 and sets Addr and Port.
func (b *Blackhole) listen(ip netip.Addr, port int) error {
	at := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	if err := syscall.SetsockoptInt(b.fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("fakesrv: blackhole on %s: set SO_REUSEADDR: %w", at, err)
	}
	if err := syscall.Bind(b.fd, &syscall.SockaddrInet4{Port: port, Addr: ip.As4()}); err != nil {
		return fmt.Errorf("fakesrv: blackhole bind %s: %w", at, err)
	}
	// A backlog of 0 still admits one connection: Linux counts the queue full only when it
	// holds more than the backlog.
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

// fill dials b.Addr once, filling the accept queue of one, and waits until the kernel has
// queued that connection on the listener. The dial returns when the client has the SYN-ACK;
// the listener queues the connection only when it has processed the client's final ACK, and a
// SYN arriving in between would still be answered. The listener polls readable exactly when
// its accept queue is not empty.
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

// waitReadable waits up to timeout for fd to poll readable. It uses epoll because the syscall
// package has no poll(2) on every Linux architecture; the runtime's netpoller is not an option
// for a socket it does not own.
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

// Close closes the filler connection and the listening socket. The port is then free: a
// connect to Addr is refused. Close is idempotent; later calls return the first call's error.
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
