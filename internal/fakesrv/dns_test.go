package fakesrv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// lookupTimeout bounds each lookup in these tests. A query the server ignores costs Go's
// resolver its timeout (5s) per attempt, so a failure shows as an error, not a hung test.
const lookupTimeout = 15 * time.Second

var inventory = map[string][]string{"inventory.test": {"127.0.0.2", "127.0.0.3", "127.0.0.4"}}

// newDNS starts a DNS server that is closed when the test ends.
func newDNS(t *testing.T, records map[string][]string) *DNS {
	t.Helper()
	d, err := NewDNS(records)
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func lookupCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	t.Cleanup(cancel)
	return ctx
}

// dnsQuery builds a query with one question, name encoded as given (no lower-casing, one
// trailing dot optional), and extra appended after the question.
func dnsQuery(id, flags uint16, name string, qtype, qclass uint16, extra ...byte) []byte {
	msg := binary.BigEndian.AppendUint16(nil, id)
	msg = binary.BigEndian.AppendUint16(msg, flags)
	msg = binary.BigEndian.AppendUint16(msg, 1) // QDCOUNT
	msg = append(msg, 0, 0, 0, 0)               // ANCOUNT, NSCOUNT
	arcount := uint16(0)
	if len(extra) > 0 {
		arcount = 1
	}
	msg = binary.BigEndian.AppendUint16(msg, arcount)
	for label := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		msg = append(msg, byte(len(label)))
		msg = append(msg, label...)
	}
	msg = append(msg, 0)
	msg = binary.BigEndian.AppendUint16(msg, qtype)
	msg = binary.BigEndian.AppendUint16(msg, qclass)
	return append(msg, extra...)
}

const (
	typeAAAA = 28
	classCH  = 3
	flagsRD  = 0x0100
)

// optRecord is the EDNS(0) OPT record Go's resolver appends to its queries: root name, type
// 41, UDP size 1232, no options.
var optRecord = []byte{0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0}

// TestDNSAnswerWire checks one answer byte for byte against RFC 1035, written out by hand.
func TestDNSAnswerWire(t *testing.T) {
	table := map[string][]netip.Addr{
		"\x09inventory\x04test\x00": {netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")},
	}
	q := dnsQuery(0xBEEF, flagsRD, "inventory.test", dnsTypeA, dnsClassIN)
	want := []byte{
		0xBE, 0xEF, // ID
		0x85, 0x80, // QR, opcode 0, AA, RD; RA, rcode 0
		0, 1, 0, 2, 0, 0, 0, 0, // QDCOUNT 1, ANCOUNT 2, NSCOUNT 0, ARCOUNT 0
		9, 'i', 'n', 'v', 'e', 'n', 't', 'o', 'r', 'y', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1,
		0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 2,
		0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 3,
	}
	if got := dnsAnswer(table, q); !bytes.Equal(got, want) {
		t.Errorf("answer:\ngot  % x\nwant % x", got, want)
	}
}

func TestDNSAnswer(t *testing.T) {
	table := map[string][]netip.Addr{
		"\x09inventory\x04test\x00": {netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4")},
		"\x05empty\x04test\x00":     {},
	}
	tests := []struct {
		name      string
		query     []byte
		wantFlags uint16 // flags of the answer
		wantAn    int    // ANCOUNT, and the A records that follow
	}{
		{"A", dnsQuery(1, flagsRD, "inventory.test", dnsTypeA, dnsClassIN), 0x8580, 3},
		{"A without RD", dnsQuery(1, 0, "inventory.test", dnsTypeA, dnsClassIN), 0x8480, 3},
		{"A mixed case", dnsQuery(1, flagsRD, "InVentory.TEST.", dnsTypeA, dnsClassIN), 0x8580, 3},
		{"A with EDNS(0)", dnsQuery(1, flagsRD, "inventory.test", dnsTypeA, dnsClassIN, optRecord...), 0x8580, 3},
		{"AAAA of a known name", dnsQuery(1, flagsRD, "inventory.test", typeAAAA, dnsClassIN), 0x8580, 0},
		{"A of class CH", dnsQuery(1, flagsRD, "inventory.test", dnsTypeA, classCH), 0x8580, 0},
		{"A of a name without addresses", dnsQuery(1, flagsRD, "empty.test", dnsTypeA, dnsClassIN), 0x8580, 0},
		{"A of an unknown name", dnsQuery(1, flagsRD, "nosuch.test", dnsTypeA, dnsClassIN), 0x8583, 0},
		{"AAAA of an unknown name", dnsQuery(1, flagsRD, "nosuch.test", typeAAAA, dnsClassIN), 0x8583, 0},
		{"A of a parent name", dnsQuery(1, flagsRD, "test", dnsTypeA, dnsClassIN), 0x8583, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.query)
			got := dnsAnswer(table, tt.query)
			if !bytes.Equal(tt.query, orig) {
				t.Errorf("the query was modified")
			}
			qEnd := bytes.IndexByte(tt.query[dnsHeaderLen:], 0) + dnsHeaderLen + 5
			if want := dnsHeaderLen + (qEnd - dnsHeaderLen) + dnsAnswerLen*tt.wantAn; len(got) != want {
				t.Fatalf("got %d bytes, want %d: % x", len(got), want, got)
			}
			if !bytes.Equal(got[0:2], tt.query[0:2]) {
				t.Errorf("ID: got % x, want % x", got[0:2], tt.query[0:2])
			}
			if flags := binary.BigEndian.Uint16(got[2:4]); flags != tt.wantFlags {
				t.Errorf("flags: got %#04x, want %#04x", flags, tt.wantFlags)
			}
			if counts := got[4:12]; !bytes.Equal(counts, []byte{0, 1, 0, byte(tt.wantAn), 0, 0, 0, 0}) {
				t.Errorf("counts: got % x, want QDCOUNT 1, ANCOUNT %d", counts, tt.wantAn)
			}
			if q := got[dnsHeaderLen:qEnd]; !bytes.Equal(q, tt.query[dnsHeaderLen:qEnd]) {
				t.Errorf("question: got % x, want it echoed: % x", q, tt.query[dnsHeaderLen:qEnd])
			}
			for i := range tt.wantAn {
				rr := got[qEnd+i*dnsAnswerLen : qEnd+(i+1)*dnsAnswerLen]
				want := append([]byte{0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4}, 127, 0, 0, byte(2+i))
				if !bytes.Equal(rr, want) {
					t.Errorf("answer %d: got % x, want % x", i, rr, want)
				}
			}
		})
	}
}

func TestDNSAnswerIgnoresMalformed(t *testing.T) {
	table := map[string][]netip.Addr{"\x09inventory\x04test\x00": {netip.MustParseAddr("127.0.0.2")}}
	good := dnsQuery(1, flagsRD, "inventory.test", dnsTypeA, dnsClassIN)
	with := func(i int, b ...byte) []byte {
		q := slices.Clone(good)
		copy(q[i:], b)
		return q
	}
	header := good[:dnsHeaderLen]
	tests := []struct {
		name  string
		query []byte
	}{
		{"empty", nil},
		{"short header", good[:dnsHeaderLen-1]},
		{"header only", header},
		{"a response", with(2, 0x81, 0x00)},
		{"opcode STATUS", with(2, 0x11, 0x00)},
		{"no question", with(4, 0, 0)},
		{"two questions", with(4, 0, 2)},
		{"compressed name", append(slices.Clone(header), 0xC0, 0x0C, 0, 1, 0, 1)},
		{"reserved label type", append(slices.Clone(header), 0x40, 'a', 0, 0, 1, 0, 1)},
		{"label past the end", append(slices.Clone(header), 9, 'i', 'n')},
		{"no root label", good[:dnsHeaderLen+15]},
		{"no type and class", good[:dnsHeaderLen+16]},
		{"half the class", good[:len(good)-1]},
		{"name over 255 bytes", dnsQuery(1, 0, strings.Repeat("a.", 128)+"test", dnsTypeA, dnsClassIN)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dnsAnswer(table, tt.query); got != nil {
				t.Errorf("got an answer % x, want none", got)
			}
		})
	}
	if dnsAnswer(table, good) == nil {
		t.Errorf("the well-formed query got no answer")
	}
}

func TestNewDNSRefuses(t *testing.T) {
	many := make([]string, 31) // 12 + 16 + 4 + 31*16 = 528 bytes for "inventory.test"
	for i := range many {
		many[i] = "127.0.0." + strconv.Itoa(i+1)
	}
	tests := []struct {
		name    string
		records map[string][]string
	}{
		{"private address", map[string][]string{"a.test": {"10.0.0.1"}}},
		{"IPv6 loopback", map[string][]string{"a.test": {"::1"}}},
		{"IPv4-mapped loopback", map[string][]string{"a.test": {"::ffff:127.0.0.1"}}},
		{"not an address", map[string][]string{"a.test": {"localhost"}}},
		{"empty name", map[string][]string{"": {"127.0.0.1"}}},
		{"root", map[string][]string{".": {"127.0.0.1"}}},
		{"empty label", map[string][]string{"a..test": {"127.0.0.1"}}},
		{"two trailing dots", map[string][]string{"a.test..": {"127.0.0.1"}}},
		{"label over 63 bytes", map[string][]string{strings.Repeat("a", 64) + ".test": {"127.0.0.1"}}},
		{"name over 255 bytes", map[string][]string{strings.Repeat("a.", 125) + "test": {"127.0.0.1"}}},
		{"same name twice", map[string][]string{"A.test": {"127.0.0.1"}, "a.test.": {"127.0.0.2"}}},
		{"answer over 512 bytes", map[string][]string{"inventory.test": many}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDNS(tt.records)
			if err == nil {
				d.Close()
				t.Fatalf("NewDNS(%v): got a server, want an error", tt.records)
			}
			if !strings.HasPrefix(err.Error(), "fakesrv: ") {
				t.Errorf("got error %q, want the prefix \"fakesrv: \"", err)
			}
		})
	}
	// The limits themselves are accepted.
	ok := map[string][]string{
		"inventory.test":                    many[:30], // 512 bytes
		strings.Repeat("a", 63) + ".test.":  {"127.0.0.1"},
		strings.Repeat("a.", 124) + "tests": {"127.0.0.1"}, // 255 bytes in wire format
	}
	d, err := NewDNS(ok)
	if err != nil {
		t.Fatalf("NewDNS at the limits: %v", err)
	}
	d.Close()
}

func TestDNSLookupHost(t *testing.T) {
	d := newDNS(t, inventory)
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	for _, name := range []string{"inventory.test", "inventory.test.", "INVENTORY.Test"} {
		got, err := d.Resolver().LookupHost(lookupCtx(t), name)
		if err != nil {
			t.Fatalf("LookupHost(%q): %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("LookupHost(%q): got %v, want %v", name, got, want)
		}
	}
	// Each lookup asks for A and AAAA, at least; the system's search domains may add more.
	if got := d.Queries(); got < 6 {
		t.Errorf("Queries: got %d, want at least 6", got)
	}
}

func TestDNSNotFound(t *testing.T) {
	d := newDNS(t, inventory)
	for _, name := range []string{"nosuch.test", "test", "www.inventory.test"} {
		addrs, err := d.Resolver().LookupHost(lookupCtx(t), name)
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			t.Errorf("LookupHost(%q): got %v, %v; want a *net.DNSError with IsNotFound", name, addrs, err)
		}
	}
}

// TestDNSDialer: Go's dialer dials the addresses of the answer in order, and only those.
func TestDNSDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	want := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))

	tests := []struct {
		name string
		ips  []string
	}{
		{"first address listens", []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}},
		// Nothing listens on 127.0.0.3:port, which refuses at once; the dialer moves on.
		{"second address listens", []string{"127.0.0.3", "127.0.0.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDNS(t, map[string][]string{"inventory.test": tt.ips})
			dialer := net.Dialer{Resolver: d.Resolver(), Timeout: lookupTimeout}
			c, err := dialer.DialContext(lookupCtx(t), "tcp", net.JoinHostPort("inventory.test", strconv.Itoa(port)))
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if got := c.RemoteAddr().String(); got != want {
				t.Errorf("RemoteAddr: got %s, want %s", got, want)
			}
			s, err := ln.Accept()
			if err != nil {
				t.Fatalf("accept: %v", err)
			}
			defer s.Close()
			if got, want := s.RemoteAddr().String(), c.LocalAddr().String(); got != want {
				t.Errorf("the listener accepted %s, want the dialer's %s", got, want)
			}
		})
	}
}

// TestDNSQueriesCountsAnswers sends raw datagrams: ignored ones are not counted.
func TestDNSQueriesCountsAnswers(t *testing.T) {
	d := newDNS(t, inventory)
	c, err := net.Dial("udp", d.Addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(lookupTimeout)); err != nil {
		t.Fatalf("set deadline: %v", err)
	}
	query := dnsQuery(7, flagsRD, "inventory.test", dnsTypeA, dnsClassIN)
	buf := make([]byte, 512)
	for i, msg := range [][]byte{[]byte("junk"), query, query[:20], query} {
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// The server answers in order, so the second answer means all four were handled.
	for i := range 2 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("read answer %d: %v", i, err)
		}
		if n < 2 || binary.BigEndian.Uint16(buf[:2]) != 7 {
			t.Errorf("answer %d: got % x, want ID 7", i, buf[:n])
		}
	}
	if got := d.Queries(); got != 2 {
		t.Errorf("Queries: got %d, want 2", got)
	}
}

func TestDNSClose(t *testing.T) {
	d, err := NewDNS(inventory)
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	if _, err := d.Resolver().LookupHost(lookupCtx(t), "inventory.test"); err != nil {
		t.Fatalf("LookupHost: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	// The port is closed: the query is refused (ICMP port unreachable), not left to time out.
	if addrs, err := d.Resolver().LookupHost(lookupCtx(t), "inventory.test"); err == nil {
		t.Errorf("LookupHost after Close: got %v, want an error", addrs)
	}
	goleak.VerifyNone(t)
}

func ExampleNewDNS() {
	d, err := NewDNS(map[string][]string{"inventory.test": {"127.0.0.2", "127.0.0.3", "127.0.0.4"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	addrs, err := d.Resolver().LookupHost(context.Background(), "inventory.test")
	fmt.Println(addrs, err)
	// Output: [127.0.0.2 127.0.0.3 127.0.0.4] <nil>
}

// floodDNS sends n queries to d, a few at a time so that the socket's buffer keeps them all.
func floodDNS(t *testing.T, d *DNS, n int) {
	t.Helper()
	c, err := net.Dial("udp", d.Addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	query := dnsQuery(7, flagsRD, "inventory.test", dnsTypeA, dnsClassIN)
	for i := range n {
		if _, err := c.Write(query); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if i%20 == 19 {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// TestDNSMaxHeld: a server with a delay holds at most DNSMaxHeld answers (DefaultDNSMaxHeld
// without the option); the queries past it are dropped and counted, and Close sends only the
// answers held.
func TestDNSMaxHeld(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   []DNSOption
		max, n int
	}{
		{"option", []DNSOption{DNSDelay(10 * time.Minute), DNSMaxHeld(8)}, 8, 50},
		{"default", []DNSOption{DNSDelay(10 * time.Minute)}, DefaultDNSMaxHeld, DefaultDNSMaxHeld + 300},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDNS(inventory, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			floodDNS(t, d, tt.n)
			// Some datagrams may be lost on a loaded machine; most are not.
			for end := time.Now().Add(5 * time.Second); d.Dropped() < (tt.n-tt.max)/2 && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if got := d.Queries(); got > tt.max {
				t.Errorf("answered %d after Close, want at most the %d held", got, tt.max)
			}
			if got := d.Dropped(); got < (tt.n-tt.max)/2 || got > tt.n-tt.max {
				t.Errorf("dropped %d, want up to %d", got, tt.n-tt.max)
			}
		})
	}
	if _, err := NewDNS(inventory, DNSMaxHeld(0)); err == nil {
		t.Error("DNSMaxHeld(0) accepted")
	}
}
