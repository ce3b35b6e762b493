package fakesrv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DNS wire format (RFC 1035, section 4).
const (
	dnsHeaderLen   = 12
	dnsMaxNameLen  = 255 // a name in wire format, length bytes and root label included
	dnsMaxLabelLen = 63
	dnsMaxUDPLen   = 512 // the largest answer a client without EDNS(0) accepts over UDP
	dnsAnswerLen   = 16  // an A record: name pointer 2, type 2, class 2, TTL 4, RDLENGTH 2, IPv4 4

	dnsFlagQR     = 1 << 15 // a response
	dnsFlagAA     = 1 << 10 // authoritative answer
	dnsFlagRD     = 1 << 8  // recursion desired, copied from the query
	dnsFlagRA     = 1 << 7  // recursion available
	dnsOpcodeMask = 0xF << 11

	dnsTypeA      = 1
	dnsClassIN    = 1
	dnsRcodeNX    = 3      // NXDOMAIN: the name does not exist
	dnsRcodeFail  = 2      // SERVFAIL: the server could not answer
	dnsNamePtr    = 0xC00C // a compression pointer to the question's name, right after the header
	dnsTTLSeconds = 60
)

// DNS is a minimal DNS server on a loopback UDP port: A queries are answered from a fixed table
// (names matched without case or trailing dot), other types with no records, unknown names with
// NXDOMAIN. A test gives a host name several loopback addresses with it, without touching the
// system's resolver. Its methods are safe for concurrent use.
//
// A query it does not understand gets no answer, so the client waits for its own timeout. It
// speaks UDP only and never truncates. The wire format is written by hand: the standard library
// keeps its parser internal, and x/net/dns/dnsmessage is not a dependency.
type DNS struct {
	Addr string

	table    map[string][]netip.Addr // lower-case wire-format name -> addresses; read-only after NewDNS
	opts     dnsOptions              // read-only after NewDNS
	conn     net.PacketConn
	mu       sync.Mutex     // guards stopping and held, and delayed.Add against Close's Wait
	stopping bool           // set by Close: answers are no longer held
	held     int            // answers waiting out opts.delay now, at most opts.maxHeld
	delayed  sync.WaitGroup // answers waiting out opts.delay
	closing  chan struct{}  // closed by Close, ends the delayed answers
	queries  atomic.Int64   // queries answered
	dropped  atomic.Int64   // queries not answered: opts.maxHeld answers were held already

	done      chan struct{} // closed when serve has returned
	serveErr  error         // why serve returned, if not Close; written before done is closed
	closeOnce sync.Once
	closeErr  error
}

// NewDNS starts a DNS server on 127.0.0.1, a free UDP port, answering from records (a host name
// to its IPv4 addresses, in answer order; none: NOERROR, no answer). It refuses an address
// outside 127.0.0.0/8, a malformed name, two names equal but for case or the trailing dot, and
// an answer over 512 bytes.
func NewDNS(records map[string][]string, opts ...DNSOption) (*DNS, error) {
	o := dnsOptions{maxHeld: DefaultDNSMaxHeld}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("fakesrv: dns: %w", err)
		}
	}
	table := make(map[string][]netip.Addr, len(records))
	for name, ips := range records {
		wire, err := dnsWireName(name)
		if err != nil {
			return nil, fmt.Errorf("fakesrv: dns record %q: %w", name, err)
		}
		key := string(wire)
		if _, dup := table[key]; dup {
			return nil, fmt.Errorf("fakesrv: dns record %q: another record names the same host", name)
		}
		if size := dnsHeaderLen + len(wire) + 4 + dnsAnswerLen*len(ips); size > dnsMaxUDPLen {
			return nil, fmt.Errorf("fakesrv: dns record %q: %d addresses make a %d-byte answer, over %d", name, len(ips), size, dnsMaxUDPLen)
		}
		addrs := make([]netip.Addr, 0, len(ips))
		for _, ip := range ips {
			a, err := netip.ParseAddr(ip)
			if err != nil || !a.Is4() || !a.IsLoopback() {
				return nil, fmt.Errorf("fakesrv: dns record %q: address %q is not an IPv4 address in 127.0.0.0/8", name, ip)
			}
			addrs = append(addrs, a)
		}
		table[key] = addrs
	}

	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakesrv: dns listen: %w", err)
	}
	d := &DNS{
		Addr:    conn.LocalAddr().String(),
		table:   table,
		opts:    o,
		conn:    conn,
		done:    make(chan struct{}),
		closing: make(chan struct{}),
	}
	go d.serve()
	return d, nil
}

// serve answers queries until the socket is closed. Another read error ends it too, for Close
// to return: an unconnected UDP socket has no transient error to retry.
func (d *DNS) serve() {
	defer close(d.done)
	buf := make([]byte, 4096) // queries are a few dozen bytes; anything longer is not ours
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				d.serveErr = fmt.Errorf("fakesrv: dns read: %w", err)
			}
			return
		}
		resp := dnsAnswer(d.table, buf[:n])
		if resp == nil {
			continue
		}
		if d.opts.servFail[dnsQuestionKey(buf[:n])] {
			resp = dnsAnswer(nil, buf[:n])
			dnsSetRcode(resp, dnsRcodeFail)
		}
		d.mu.Lock()
		stopping := d.stopping
		hold := d.opts.delay > 0 && !stopping
		full := hold && d.held >= d.opts.maxHeld
		if hold && !full {
			d.held++
			d.delayed.Add(1)
		}
		d.mu.Unlock()
		switch {
		case stopping && d.opts.delay > 0:
			// A query read while Close runs is not answered.
		case full:
			// An overloaded resolver drops the query.
			d.dropped.Add(1)
		case !hold:
			d.send(resp, from)
		default:
			go d.sendLater(resp, from)
		}
	}
}

// sendLater sends resp after the delay, or at once on Close.
func (d *DNS) sendLater(resp []byte, from net.Addr) {
	defer d.delayed.Done()
	t := time.NewTimer(d.opts.delay)
	select {
	case <-t.C:
	case <-d.closing:
		t.Stop()
	}
	d.send(resp, from)
	d.mu.Lock()
	d.held--
	d.mu.Unlock()
}

// Dropped returns how many queries got no answer because DNSMaxHeld answers were held.
func (d *DNS) Dropped() int { return int(d.dropped.Load()) }

// send counts resp before it sends it, so a client holding the answer sees it counted; a failed
// send is a lost datagram.
func (d *DNS) send(resp []byte, from net.Addr) {
	d.queries.Add(1)
	_, _ = d.conn.WriteTo(resp, from)
}

// DNSOption changes how a DNS server answers.
type DNSOption func(*dnsOptions) error

type dnsOptions struct {
	delay    time.Duration
	maxHeld  int             // answers held at once under delay
	servFail map[string]bool // lower-case wire-format names answered SERVFAIL
}

// DefaultDNSMaxHeld bounds the answers a delaying server holds at once: each costs a goroutine
// and a timer.
const DefaultDNSMaxHeld = 1000

// DNSMaxHeld makes a delaying server hold at most n answers at once; a query beyond them gets
// no answer and counts in Dropped.
func DNSMaxHeld(n int) DNSOption {
	return func(o *dnsOptions) error {
		if n < 1 {
			return fmt.Errorf("answers held must be at least 1, got %d", n)
		}
		o.maxHeld = n
		return nil
	}
}

// DNSDelay makes the server hold every answer for d: a slow resolver. Close sends the answers
// still held at once.
func DNSDelay(d time.Duration) DNSOption {
	return func(o *dnsOptions) error {
		if d < 0 {
			return fmt.Errorf("delay must not be negative, got %v", d)
		}
		o.delay = d
		return nil
	}
}

// DNSServFail makes the server answer SERVFAIL for names, as a recursive resolver whose
// upstream is down does.
func DNSServFail(names ...string) DNSOption {
	return func(o *dnsOptions) error {
		if o.servFail == nil {
			o.servFail = map[string]bool{}
		}
		for _, n := range names {
			wire, err := dnsWireName(n)
			if err != nil {
				return fmt.Errorf("servfail name %q: %w", n, err)
			}
			o.servFail[string(wire)] = true
		}
		return nil
	}
}

// dnsQuestionKey is the lower-case wire-format name of a query dnsAnswer answered.
func dnsQuestionKey(msg []byte) string {
	i := dnsHeaderLen
	for i < len(msg) && msg[i] != 0 {
		i += 1 + int(msg[i])
	}
	if i >= len(msg) {
		return ""
	}
	return string(dnsLower(append([]byte(nil), msg[dnsHeaderLen:i+1]...)))
}

func dnsSetRcode(resp []byte, rcode uint16) {
	flags := binary.BigEndian.Uint16(resp[2:4])
	binary.BigEndian.PutUint16(resp[2:4], flags&^0xF|rcode)
}

// Resolver returns a new Go resolver (PreferGo) that sends every query to the server. The rest
// of Go's resolver still applies: /etc/hosts first, resolv.conf's search, timeout and attempts,
// and an A and an AAAA query for a lookup of both families.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			// The answers are never truncated, so Go never asks for TCP.
			var dialer net.Dialer
			return dialer.DialContext(ctx, "udp", d.Addr)
		},
	}
}

// Queries returns how many queries the server answered.
func (d *DNS) Queries() int {
	return int(d.queries.Load())
}

// Close stops the server and waits for its goroutine. It returns an error when the server had
// stopped on a read error or the socket does not close; later calls return the same.
func (d *DNS) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.stopping = true
		close(d.closing)
		d.mu.Unlock()
		d.delayed.Wait()
		err := d.conn.Close()
		<-d.done
		if err != nil {
			err = fmt.Errorf("fakesrv: dns close: %w", err)
		}
		d.closeErr = errors.Join(d.serveErr, err)
	})
	return d.closeErr
}

// dnsWireName encodes a host name in lower-case wire format; one trailing dot is allowed.
func dnsWireName(name string) ([]byte, error) {
	trimmed := strings.TrimSuffix(name, ".")
	if trimmed == "" {
		return nil, errors.New("empty name")
	}
	wire := make([]byte, 0, len(trimmed)+2)
	for label := range strings.SplitSeq(trimmed, ".") {
		if label == "" || len(label) > dnsMaxLabelLen {
			return nil, fmt.Errorf("label %q: want 1 to %d bytes", label, dnsMaxLabelLen)
		}
		wire = append(wire, byte(len(label)))
		wire = append(wire, label...)
	}
	wire = append(wire, 0)
	if len(wire) > dnsMaxNameLen {
		return nil, fmt.Errorf("%d bytes in wire format, over %d", len(wire), dnsMaxNameLen)
	}
	return dnsLower(wire), nil
}

// dnsLower lower-cases the ASCII letters of b in place, as DNS compares names (RFC 4343).
func dnsLower(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return b
}

// dnsAnswer returns the response to the query msg from table, nil for a message it does not
// answer.
func dnsAnswer(table map[string][]netip.Addr, msg []byte) []byte {
	if len(msg) < dnsHeaderLen {
		return nil
	}
	flags := binary.BigEndian.Uint16(msg[2:4])
	if flags&dnsFlagQR != 0 || flags&dnsOpcodeMask != 0 || binary.BigEndian.Uint16(msg[4:6]) != 1 {
		return nil
	}
	// The question: a name without compression, then type and class; what follows is ignored.
	i := dnsHeaderLen
	for {
		if i >= len(msg) {
			return nil
		}
		n := int(msg[i])
		if n&0xC0 != 0 { // 0b11: a compression pointer; 0b01, 0b10: reserved label types
			return nil
		}
		i += 1 + n
		if n == 0 {
			break
		}
	}
	nameEnd := i
	if nameEnd-dnsHeaderLen > dnsMaxNameLen || nameEnd+4 > len(msg) {
		return nil
	}
	question := msg[dnsHeaderLen : nameEnd+4]
	qtype := binary.BigEndian.Uint16(msg[nameEnd : nameEnd+2])
	qclass := binary.BigEndian.Uint16(msg[nameEnd+2 : nameEnd+4])

	key := dnsLower(append([]byte(nil), msg[dnsHeaderLen:nameEnd]...))
	addrs, known := table[string(key)]
	var rcode uint16
	switch {
	case !known:
		rcode = dnsRcodeNX
		addrs = nil
	case qtype != dnsTypeA || qclass != dnsClassIN:
		addrs = nil
	}

	resp := make([]byte, dnsHeaderLen, dnsHeaderLen+len(question)+dnsAnswerLen*len(addrs))
	copy(resp[0:2], msg[0:2]) // ID
	binary.BigEndian.PutUint16(resp[2:4], dnsFlagQR|dnsFlagAA|flags&dnsFlagRD|dnsFlagRA|rcode)
	binary.BigEndian.PutUint16(resp[4:6], 1)                  // QDCOUNT
	binary.BigEndian.PutUint16(resp[6:8], uint16(len(addrs))) // ANCOUNT; NSCOUNT, ARCOUNT 0
	resp = append(resp, question...)
	for _, a := range addrs {
		resp = binary.BigEndian.AppendUint16(resp, dnsNamePtr)
		resp = binary.BigEndian.AppendUint16(resp, dnsTypeA)
		resp = binary.BigEndian.AppendUint16(resp, dnsClassIN)
		resp = binary.BigEndian.AppendUint32(resp, dnsTTLSeconds)
		resp = binary.BigEndian.AppendUint16(resp, 4) // RDLENGTH
		ip := a.As4()
		resp = append(resp, ip[:]...)
	}
	return resp
}
