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

// DNS wire-format constants (RFC 1035, section 4).
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

// DNS is a minimal DNS server on a loopback UDP port that answers A queries from a fixed table
// (names are matched case-insensitively, with or without the trailing dot) and answers every
// other query (AAAA, unknown names) with no records: NOERROR for known names with other types,
// NXDOMAIN for unknown names. It exists so that a test can give a host name several loopback
// addresses and watch a Go client walk them, without touching /etc/hosts or the system's
// resolver. Create it with NewDNS, query it through Resolver, stop it with Close. Its methods
// are safe for concurrent use.
//
// Answers carry QR, AA, RA and the query's RD, echo the question as received and give each A
// record TTL 60. Queries it does not understand (too short, a response, an opcode other than
// QUERY, a question count other than 1, a compressed or truncated question name) get no answer,
// so the client waits for its own timeout. It speaks UDP only and never truncates: NewDNS
// refuses a name whose answer would not fit in 512 bytes.
//
// The wire format is written by hand: the standard library keeps its DNS parser internal and
// golang.org/x/net/dns/dnsmessage is not a dependency of this module.
type DNS struct {
	// Addr is the server's UDP address, "127.0.0.1:PORT".
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

// NewDNS starts a DNS server on 127.0.0.1, a free UDP port, answering from records: a host
// name ("inventory.test", or "inventory.test." fully qualified) -> its IPv4 addresses in the
// order they are answered, e.g. {"inventory.test": {"127.0.0.2", "127.0.0.3", "127.0.0.4"}}.
// A name with no addresses exists but has no A record (NOERROR, no answer). Records are copied.
//
// NewDNS refuses an address that is not IPv4 in 127.0.0.0/8, so that a client following the
// answers stays on this machine; a malformed name (an empty label, a label over 63 bytes, a
// name over 255 bytes in wire format); two names equal but for case or the trailing dot; and a
// name with more addresses than fit in one 512-byte UDP answer.
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

// serve answers queries until the socket is closed. A read error other than the close ends it
// too, recorded for Close to return: on an unconnected UDP socket there is no transient read
// error to retry, and retrying a persistent one would spin.
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
			// The answer to a name it does not know has no records; only its code differs.
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
			// A query read while Close runs is not answered: Close sends the answers it
			// held, and no more.
		case full:
			// An overloaded resolver drops the query; the client asks again or times out.
			d.dropped.Add(1)
		case !hold:
			d.send(resp, from)
		default:
			go d.sendLater(resp, from)
		}
	}
}

// sendLater sends resp to from after the delay, or at once when Close is called.
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

// send counts resp and sends it to from. It is counted before it is sent, so that a client
// holding the answer sees it counted; a failed send is the client's loss (it times out), like
// a lost datagram.
func (d *DNS) send(resp []byte, from net.Addr) {
	d.queries.Add(1)
	_, _ = d.conn.WriteTo(resp, from)
}

// DNSOption changes how a DNS server answers.
type DNSOption func(*dnsOptions) error

// dnsOptions are the DNS server's faults.
type dnsOptions struct {
	delay    time.Duration
	maxHeld  int             // answers held at once under delay
	servFail map[string]bool // lower-case wire-format names answered SERVFAIL
}

// DefaultDNSMaxHeld bounds the answers a DNS server with a delay holds at once (DNSMaxHeld):
// each costs a goroutine and a timer until it is sent, so that a flood of queries cannot grow
// the server's memory without bound.
const DefaultDNSMaxHeld = 1000

// DNSMaxHeld makes a server with a delay hold at most n answers at once (DefaultDNSMaxHeld
// without it): a query that comes while n are held gets no answer, as an overloaded resolver
// drops it, and is counted by Dropped.
func DNSMaxHeld(n int) DNSOption {
	return func(o *dnsOptions) error {
		if n < 1 {
			return fmt.Errorf("answers held must be at least 1, got %d", n)
		}
		o.maxHeld = n
		return nil
	}
}

// DNSDelay makes the server hold every answer for d before it sends it: a slow resolver. A
// client's resolver that gives up sooner (Go's: the timeout of /etc/resolv.conf, 5 s by
// default, per try) never sees it. Close sends the answers still held at once, so that no
// lookup is left waiting for its resolver's timeout.
func DNSDelay(d time.Duration) DNSOption {
	return func(o *dnsOptions) error {
		if d < 0 {
			return fmt.Errorf("delay must not be negative, got %v", d)
		}
		o.delay = d
		return nil
	}
}

// DNSServFail makes the server answer SERVFAIL (the server failed, as an upstream that is
// down makes a recursive resolver answer) for names, whether or not they have records.
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

// dnsQuestionKey is the lower-case wire-format name of a query that dnsAnswer answered.
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

// dnsSetRcode sets the response code of resp.
func dnsSetRcode(resp []byte, rcode uint16) {
	flags := binary.BigEndian.Uint16(resp[2:4])
	binary.BigEndian.PutUint16(resp[2:4], flags&^0xF|rcode)
}

// Resolver returns a new resolver that sends every query to the server: Go's own resolver
// (PreferGo), whose Dial ignores the address Go asks for and always dials Addr over UDP.
//
// Everything else about Go's resolver still applies: /etc/hosts is read first (per
// /etc/nsswitch.conf), the search domains, ndots, timeout and attempts of /etc/resolv.conf are
// followed, and a lookup of both families (LookupHost, a dial of "tcp") sends an A and an AAAA
// query. Go keeps the order of the A records: it sorts addresses by RFC 6724, but stably, and
// applies the prefix-length rule to IPv6 only.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			// The answers are never truncated, so Go never asks for TCP; a UDP conn also makes
			// it frame the messages as datagrams whatever network it asked for.
			var dialer net.Dialer
			return dialer.DialContext(ctx, "udp", d.Addr)
		},
	}
}

// Queries returns how many queries the server has answered (ignored ones are not counted).
func (d *DNS) Queries() int {
	return int(d.queries.Load())
}

// Close stops the server and waits for its goroutine. It returns an error if the server had
// stopped on its own (a read error) or its socket does not close. Close is idempotent; later
// calls return the first call's error.
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

// dnsWireName encodes a host name in lower-case wire format: labels, each after its length
// byte, then the root label (0). One trailing dot is allowed.
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

// dnsLower lower-cases the ASCII letters of b in place, as DNS compares names (RFC 4343):
// other bytes, length bytes included (at most 63, below 'A'), are left alone.
func dnsLower(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return b
}

// dnsAnswer returns the response to the query msg from table, or nil if msg is not a query it
// answers (see DNS). It does not modify msg.
func dnsAnswer(table map[string][]netip.Addr, msg []byte) []byte {
	if len(msg) < dnsHeaderLen {
		return nil
	}
	flags := binary.BigEndian.Uint16(msg[2:4])
	if flags&dnsFlagQR != 0 || flags&dnsOpcodeMask != 0 || binary.BigEndian.Uint16(msg[4:6]) != 1 {
		return nil
	}
	// The question: a name as labels (no compression pointer: there is nothing before it to
	// point to), then type and class. Records after it, such as Go's EDNS(0) OPT, are ignored.
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
