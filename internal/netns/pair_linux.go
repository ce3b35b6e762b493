//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// Loopback addresses on the veth ends (route_localnet=1), so nothing leaves 127.0.0.0/8 or the
// child's namespaces. The namespaces' lo stays down, or its local route would claim the peer's.
const (
	clientCIDR = "127.77.0.1/30"
	serverCIDR = "127.77.0.2/30"
)

const (
	clientLinkName = "lr-client"
	serverLinkName = "lr-server"
)

const linkUpWait = 5 * time.Second

// Pair is two hosts joined by a veth pair: the child's namespace is the client, one NewPair
// makes the server. Make one at a time in a namespace child; Close releases it. Its methods are
// safe for concurrent use.
type Pair struct {
	Client, Server netip.Addr

	server     vnetns.NsHandle // held open while the pair lives
	clientNL   *netlink.Handle
	serverNL   *netlink.Handle
	serverLink netlink.Link

	closeOnce sync.Once
	closeErr  error
}

// NewPair creates the server namespace and a veth pair to it, and waits until both ends are up.
// Static neighbour entries keep a vanished peer silent, with no ARP failure ("no route to host").
// It refuses outside a namespace child.
func NewPair(ctx context.Context) (*Pair, error) {
	if err := checkChild(); err != nil {
		return nil, fmt.Errorf("netns: new pair: %w", err)
	}
	client, server := netip.MustParsePrefix(clientCIDR), netip.MustParsePrefix(serverCIDR)
	p := &Pair{Client: client.Addr(), Server: server.Addr(), server: vnetns.None()}
	if err := p.build(ctx, client, server); err != nil {
		return nil, errors.Join(fmt.Errorf("netns: new pair: %w", err), p.Close())
	}
	return p, nil
}

// localnet is the sysctls the veth ends inherit: loopback routing, and IPv6 off so no
// solicitation crosses the link.
func localnet() [][2]string {
	return [][2]string{
		{"net.ipv4.conf.all.route_localnet", "1"},
		{"net.ipv4.conf.default.route_localnet", "1"},
		{"net.ipv6.conf.all.disable_ipv6", "1"},
		{"net.ipv6.conf.default.disable_ipv6", "1"},
	}
}

func (p *Pair) build(ctx context.Context, clientPrefix, serverPrefix netip.Prefix) error {
	server, err := newServerNamespace()
	if err != nil {
		return err
	}
	p.server = server
	if p.clientNL, err = netlink.NewHandle(); err != nil {
		return fmt.Errorf("netlink in client namespace: %w", err)
	}
	if p.serverNL, err = netlink.NewHandleAt(server); err != nil {
		return fmt.Errorf("netlink in server namespace: %w", err)
	}
	for _, s := range localnet() {
		if err := SetSysctl(s[0], s[1]); err != nil {
			return err
		}
		if err := p.SetServerSysctl(s[0], s[1]); err != nil {
			return err
		}
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: clientLinkName},
		PeerName:      serverLinkName,
		PeerNamespace: netlink.NsFd(int(server)),
	}
	if err := p.clientNL.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s/%s: %w", clientLinkName, serverLinkName, err)
	}
	client, err := p.clientNL.LinkByName(clientLinkName)
	if err != nil {
		return fmt.Errorf("client end %s: %w", clientLinkName, err)
	}
	if p.serverLink, err = p.serverNL.LinkByName(serverLinkName); err != nil {
		return fmt.Errorf("server end %s: %w", serverLinkName, err)
	}
	if err := setUp(p.clientNL, client, clientPrefix, p.serverLink.Attrs().HardwareAddr, serverPrefix.Addr()); err != nil {
		return err
	}
	if err := setUp(p.serverNL, p.serverLink, serverPrefix, client.Attrs().HardwareAddr, clientPrefix.Addr()); err != nil {
		return err
	}
	if err := SetSysctl("net.ipv4.conf."+clientLinkName+".route_localnet", "1"); err != nil {
		return err
	}
	if err := p.SetServerSysctl("net.ipv4.conf."+serverLinkName+".route_localnet", "1"); err != nil {
		return err
	}
	return p.waitUp(ctx)
}

// setUp addresses a veth end, adds a permanent neighbour for the peer and sets it up.
func setUp(h *netlink.Handle, link netlink.Link, addr netip.Prefix, peerMAC net.HardwareAddr, peer netip.Addr) error {
	name := link.Attrs().Name
	a := &netlink.Addr{IPNet: &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), 32)}}
	if err := h.AddrAdd(link, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	n := &netlink.Neigh{LinkIndex: link.Attrs().Index, State: netlink.NUD_PERMANENT, IP: peer.AsSlice(), HardwareAddr: peerMAC}
	if err := h.NeighAdd(n); err != nil {
		return fmt.Errorf("neighbour %s on %s: %w", peer, name, err)
	}
	return nil
}

// waitUp waits until both ends are up: before, a first SYN would be dropped.
func (p *Pair) waitUp(ctx context.Context) error {
	deadline := time.Now().Add(linkUpWait)
	for {
		c, err := p.clientNL.LinkByName(clientLinkName)
		if err != nil {
			return fmt.Errorf("client end %s: %w", clientLinkName, err)
		}
		s, err := p.serverNL.LinkByName(serverLinkName)
		if err != nil {
			return fmt.Errorf("server end %s: %w", serverLinkName, err)
		}
		if c.Attrs().OperState == netlink.OperUp && s.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("veth not up after %v: client %s, server %s", linkUpWait, c.Attrs().OperState, s.Attrs().OperState)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ListenServer listens in the server namespace; an empty host is the server address.
func (p *Pair) ListenServer(network, addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("netns: listen on %q: %w", addr, err)
	}
	if host == "" {
		addr = net.JoinHostPort(p.Server.String(), port)
	}
	var l net.Listener
	err = inNamespace(p.server, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns: listen in server namespace: %w", err)
	}
	return l, nil
}

// Vanish sets the server end down: packets between the hosts are dropped, with no FIN, RST or
// ICMP. It returns once the client end lost its carrier; before, sends fail locally and TCP
// would back off on another timer.
func (p *Pair) Vanish(ctx context.Context) error {
	if err := p.serverNL.LinkSetDown(p.serverLink); err != nil {
		return fmt.Errorf("netns: vanish: set %s down: %w", serverLinkName, err)
	}
	deadline := time.Now().Add(linkUpWait)
	for {
		c, err := p.clientNL.LinkByName(clientLinkName)
		if err != nil {
			return fmt.Errorf("netns: vanish: client end %s: %w", clientLinkName, err)
		}
		if c.Attrs().OperState != netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: vanish: client end %s still up after %v", clientLinkName, linkUpWait)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Millisecond):
		}
	}
}

// SetServerSysctl sets a sysctl of the server namespace.
func (p *Pair) SetServerSysctl(name, value string) error {
	return inNamespace(p.server, func() error { return writeSysctl(name, value) })
}

// Close deletes the pair and the server namespace; it is idempotent.
func (p *Pair) Close() error {
	p.closeOnce.Do(func() {
		var errs []error
		if p.serverNL != nil {
			if p.serverLink != nil {
				if err := p.serverNL.LinkDel(p.serverLink); err != nil {
					errs = append(errs, fmt.Errorf("netns: delete veth: %w", err))
				}
			}
			p.serverNL.Close()
		}
		if p.clientNL != nil {
			p.clientNL.Close()
		}
		if p.server.IsOpen() {
			if err := p.server.Close(); err != nil {
				errs = append(errs, fmt.Errorf("netns: close server namespace: %w", err))
			}
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// SetSysctl sets a sysctl of the thread's network namespace ("net.ipv4.tcp_retries2"); it
// refuses outside a namespace child, so never the host's.
func SetSysctl(name, value string) error {
	if err := checkChild(); err != nil {
		return fmt.Errorf("netns: set %s: %w", name, err)
	}
	return writeSysctl(name, value)
}

// ReadSysctl reads a sysctl of the thread's network namespace, anywhere.
func ReadSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", fmt.Errorf("netns: read %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeSysctl writes unchecked: only for this package's namespaces.
func writeSysctl(name, value string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := os.WriteFile(sysctlPath(name), []byte(value), 0); err != nil {
		return fmt.Errorf("netns: set %s to %s: %w", name, value, err)
	}
	return nil
}

func sysctlPath(name string) string {
	return "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// newServerNamespace creates a network namespace on a locked thread (unshare moves the thread),
// leaving every thread where it was.
func newServerNamespace() (vnetns.NsHandle, error) {
	var ns vnetns.NsHandle
	err := onLockedThread(func() error {
		var err error
		if ns, err = vnetns.New(); err != nil {
			return fmt.Errorf("create server namespace: %w", err)
		}
		return nil
	})
	return ns, err
}

func inNamespace(ns vnetns.NsHandle, f func() error) error {
	return onLockedThread(func() error {
		if err := vnetns.Set(ns); err != nil {
			return fmt.Errorf("enter server namespace: %w", err)
		}
		return f()
	})
}

// onLockedThread runs f on a goroutine locked to its thread and restores the thread's namespace;
// failing that, the thread stays locked and dies with the goroutine.
func onLockedThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		defer back.Close()
		ferr := f()
		if err := vnetns.Set(back); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("return to own network namespace: %w", err))
			return // the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
