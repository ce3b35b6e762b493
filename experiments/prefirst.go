package experiments

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// PreFirst is experiment K: failures before the first byte. A name lookup that is slow or
// fails, a TLS handshake the server never answers, a certificate that fails, a host whose first
// address has a bad certificate: which limit bounds each step in each library, and who tries
// again where. It runs every profile by design (FixedProfiles), one table entry per profile.
type PreFirst struct {
	ConnectTimeout, ReadTimeout time.Duration
	// HandshakeTimeout is the limit that really bounds the handshake, where the library has
	// one of its own: HttpClient 5's TlsConfig handshake timeout (or socket timeout), net/http's
	// TLSHandshakeTimeout.
	HandshakeTimeout time.Duration
	LookupDelay      time.Duration
	// HandshakeGap and HandshakeBytes are the slow handshake's trickle: HandshakeBytes bytes
	// of the server's flight, each after HandshakeGap.
	HandshakeGap   time.Duration
	HandshakeBytes int
	// Cap is how long the lab lets a call wait that no limit of the library ends.
	Cap time.Duration
}

// NewPreFirst returns experiment K with its default parameters, scaled down so that it takes
// a few seconds.
func NewPreFirst() *PreFirst {
	return &PreFirst{ConnectTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond,
		HandshakeTimeout: 150 * time.Millisecond, LookupDelay: 250 * time.Millisecond,
		HandshakeGap: 20 * time.Millisecond, HandshakeBytes: 15, Cap: 400 * time.Millisecond}
}

// Info implements Experiment.
func (*PreFirst) Info() Info {
	return Info{
		Name:  "exp-k",
		Topic: "first-byte",
		Title: "before the first byte: DNS and TLS",
		Description: "Phase 2 is a name lookup, a TCP connect and a TLS handshake. A server that accepts " +
			"and never answers the ClientHello: HttpClient 5.2 with a connect and a response timeout " +
			"waits as long as the server holds the socket (only its socket timeout or TlsConfig's " +
			"handshake timeout bound the handshake), OkHttp's and HttpURLConnection's read timeout " +
			"ends it, HttpClient 4.5's connect timeout (as the handshake's socket timeout), the JDK " +
			"HttpClient's connect or request timeout, and net/http's Transport.TLSHandshakeTimeout, " +
			"0 in a Transport literal. A server that answers one byte at a time within the read " +
			"timeout is ended by a deadline only (net/http's, the JDK HttpClient's), never by a " +
			"socket timeout. A certificate from an unknown CA or for another host fails at once: " +
			"HttpClient 5 tries the host's next address in the same connect, the others do not. A " +
			"slow lookup is bounded by Go's dialer timeout only; the JDK HttpClient's request timeout " +
			"fails the call when the lookup returns. NXDOMAIN and SERVFAIL are retried by the JDK " +
			"HttpClient alone (once). Calls that nothing ends are capped by the lab (--cap) and " +
			"shown as a hang. OkHttp 3.0-3.2 behaves as 3.13 here, so okhttp@3.2 has no rows.",
		Examples: []string{"labrun exp-k", "labrun exp-k --handshake-timeout 300ms --cap 1s"},
	}
}

// Profiles implements FixedProfiles.
func (*PreFirst) Profiles() []string {
	return []string{ProfileHC5, ProfileOkHttp, ProfileGo, ProfileJDK, ProfileURLConnection, ProfileHC4}
}

// Params implements Experiment.
func (k *PreFirst) Params() []Param {
	return []Param{
		{Name: "connect-timeout", Usage: "connect timeout of every client", Duration: &k.ConnectTimeout, MaxDuration: 10 * time.Second},
		{Name: "read-timeout", Usage: "read timeout of every client (net/http: ResponseHeaderTimeout)", Duration: &k.ReadTimeout, MaxDuration: 10 * time.Second},
		{Name: "handshake-timeout", Usage: "in the rows that set it, the limit that bounds the handshake: HttpClient 5's and 4.5's " +
			"socket timeout, net/http's TLSHandshakeTimeout, OkHttp's and HttpURLConnection's read timeout, the JDK HttpClient's connect timeout",
			Duration: &k.HandshakeTimeout, MaxDuration: 10 * time.Second},
		{Name: "lookup-delay", Usage: "how long the slow DNS server takes to answer", Duration: &k.LookupDelay, MaxDuration: 4 * time.Second},
		{Name: "handshake-gap", Usage: "the slow handshake's pause before each byte", Duration: &k.HandshakeGap, MaxDuration: 10 * time.Second},
		{Name: "handshake-bytes", Usage: "how many bytes of its flight the slow handshake trickles", Int: &k.HandshakeBytes, Min: 1, Max: 1000},
		{Name: "cap", Usage: "how long the lab lets a call that nothing bounds wait", Duration: &k.Cap, MaxDuration: 30 * time.Second},
	}
}

// Check implements Checker.
func (k *PreFirst) Check() error {
	for _, p := range []struct {
		name string
		v    time.Duration
	}{{"--connect-timeout", k.ConnectTimeout}, {"--read-timeout", k.ReadTimeout}, {"--handshake-timeout", k.HandshakeTimeout},
		{"--lookup-delay", k.LookupDelay}, {"--handshake-gap", k.HandshakeGap}, {"--cap", k.Cap}} {
		if p.v <= 0 {
			return fmt.Errorf("%s must be set", p.name)
		}
	}
	if k.HandshakeBytes <= 0 {
		return fmt.Errorf("--handshake-bytes must be set")
	}
	if k.Cap <= 2*max(k.ReadTimeout, k.HandshakeTimeout) || k.Cap <= k.LookupDelay {
		return fmt.Errorf("--cap must be longer than twice the read and handshake timeouts and than --lookup-delay, got %v", k.Cap)
	}
	if k.trickle().Total() >= k.Cap {
		return fmt.Errorf("--cap must be longer than the slow handshake (--handshake-gap × --handshake-bytes, %v), got %v", k.trickle().Total(), k.Cap)
	}
	return nil
}

// The names exp-k's DNS servers answer, and the addresses of its TLS fault listeners (apart
// from the other experiments', since experiments run at once).
const (
	kStall      = "stall.test"      // one address: a stalled handshake
	kStall2     = "stall2.test"     // two addresses, both stalled
	kUntrusted  = "untrusted.test"  // a certificate of an unknown CA
	kWrongHost  = "wronghost.test"  // a certificate for another name
	kExpired    = "expired.test"    // an expired certificate
	kIncomplete = "incomplete.test" // a leaf without its intermediate
	kBadFirst   = "badfirst.test"   // a wrong-host certificate first, a good one second
	kOld        = "old.test"        // two addresses that speak TLS 1.0 only
	kSlow       = "slow.test"       // good, but on the slow DNS server
	kSlowTLS    = "slowtls.test"    // a handshake answered byte by byte
	kMissing    = "missing.test"    // NXDOMAIN
	kDown       = "down.test"       // SERVFAIL
)

// kListeners are the fault listeners, each on its own address, one port for all.
var kListeners = []struct {
	ip    string
	fault fakesrv.TLSFault
}{
	{"127.0.11.1", fakesrv.TLSStall}, {"127.0.11.2", fakesrv.TLSStall}, {"127.0.11.3", fakesrv.TLSUnknownCA},
	{"127.0.11.4", fakesrv.TLSWrongHost}, {"127.0.11.5", fakesrv.TLSExpired}, {"127.0.11.6", fakesrv.TLSIncompleteChain},
	{"127.0.11.7", fakesrv.TLSGood}, {"127.0.11.8", fakesrv.TLSOldVersion}, {"127.0.11.9", fakesrv.TLSOldVersion},
	{"127.0.11.10", fakesrv.TLSSlowHandshake},
}

// kRecords are the names and their addresses.
var kRecords = map[string][]string{
	kStall: {"127.0.11.1"}, kStall2: {"127.0.11.1", "127.0.11.2"}, kUntrusted: {"127.0.11.3"},
	kWrongHost: {"127.0.11.4"}, kExpired: {"127.0.11.5"}, kIncomplete: {"127.0.11.6"},
	kBadFirst: {"127.0.11.4", "127.0.11.7"}, kDown: {"127.0.11.7"}, kOld: {"127.0.11.8", "127.0.11.9"},
	kSlowTLS: {"127.0.11.10"},
}

// kRow is one row of a profile: what the client is asked, the fault the model is told of, and
// the knob that matters.
type kRow struct {
	label string
	host  string
	slow  bool // resolved by the slow DNS server
	fault model.PreFirst
	// handshake sets the limit that bounds the profile's handshake to HandshakeTimeout
	// (handshakeLimit).
	handshake bool
}

// trickle is the slow handshake's pace.
func (k *PreFirst) trickle() fakesrv.Trickle {
	return fakesrv.Trickle{Gap: k.HandshakeGap, Bytes: k.HandshakeBytes}
}

// kRows are the rows every profile runs.
func (k *PreFirst) kRows() []kRow {
	slow := model.PreFirst{Fault: model.SlowHandshake, ByteGap: k.HandshakeGap, Bytes: k.HandshakeBytes}
	trickle := fmt.Sprintf("handshake answered one byte every %v, %d bytes", k.HandshakeGap, k.HandshakeBytes)
	return []kRow{
		{label: "stalled handshake, connect and read timeouts only", host: kStall, fault: model.PreFirst{Fault: model.HandshakeStall}},
		{label: "stalled handshake on both of two addresses, handshake limit " + k.HandshakeTimeout.String(), host: kStall2, handshake: true,
			fault: model.PreFirst{Fault: model.HandshakeStall, Routes: 2}},
		{label: trickle + ", connect and read timeouts only", host: kSlowTLS, fault: slow},
		{label: trickle + ", handshake limit " + k.HandshakeTimeout.String(), host: kSlowTLS, handshake: true, fault: slow},
		{label: "certificate of an unknown CA", host: kUntrusted, fault: model.PreFirst{Fault: model.BadCertificate}},
		{label: "certificate for another host name", host: kWrongHost, fault: model.PreFirst{Fault: model.BadCertificate}},
		{label: "expired certificate", host: kExpired, fault: model.PreFirst{Fault: model.BadCertificate}},
		{label: "chain without its intermediate", host: kIncomplete, fault: model.PreFirst{Fault: model.BadCertificate}},
		{label: "first address a wrong-host certificate, second good", host: kBadFirst,
			fault: model.PreFirst{Fault: model.BadCertificate, Routes: 2, Bad: 1}},
		{label: "TLS 1.0 only, on both of two addresses", host: kOld, fault: model.PreFirst{Fault: model.ProtocolFailure, Routes: 2}},
		{label: "lookup answered after " + k.LookupDelay.String(), host: kSlow, slow: true,
			fault: model.PreFirst{Fault: model.SlowLookup, LookupDelay: k.LookupDelay}},
		{label: "NXDOMAIN", host: kMissing, fault: model.PreFirst{Fault: model.NXDomain}},
		{label: "SERVFAIL", host: kDown, fault: model.PreFirst{Fault: model.ServFail}},
	}
}

// kLab is exp-k's servers.
type kLab struct {
	port      int
	listeners []*fakesrv.TLSFaultServer
	dns, slow *fakesrv.DNS
	roots     *tls.Config
}

func (l *kLab) close() {
	for _, s := range l.listeners {
		s.Close()
	}
	if l.dns != nil {
		l.dns.Close()
	}
	if l.slow != nil {
		l.slow.Close()
	}
}

// accepted counts the connections all listeners accepted.
func (l *kLab) accepted() int {
	n := 0
	for _, s := range l.listeners {
		n += s.Accepted()
	}
	return n
}

// newKLab starts the listeners, one port on every address, and the two DNS servers.
func newKLab(delay time.Duration, trickle fakesrv.Trickle) (*kLab, error) {
	var names []string
	for n := range kRecords {
		names = append(names, n)
	}
	faults, err := fakesrv.NewTLSFaults(append(names, kSlow)...)
	if err != nil {
		return nil, err
	}
	kl := &kLab{roots: &tls.Config{RootCAs: faults.Pool(), MinVersion: tls.VersionTLS12}}
	for _, l := range kListeners {
		var s *fakesrv.TLSFaultServer
		if l.fault == fakesrv.TLSSlowHandshake {
			s, err = faults.ListenTrickle(l.ip, kl.port, trickle)
		} else {
			s, err = faults.Listen(l.fault, l.ip, kl.port)
		}
		if err != nil {
			kl.close()
			return nil, err
		}
		kl.listeners, kl.port = append(kl.listeners, s), portOf(s.Addr)
	}
	if kl.dns, err = fakesrv.NewDNS(kRecords, fakesrv.DNSServFail(kDown)); err != nil {
		kl.close()
		return nil, err
	}
	if kl.slow, err = fakesrv.NewDNS(map[string][]string{kSlow: {"127.0.11.7"}}, fakesrv.DNSDelay(delay)); err != nil {
		kl.close()
		return nil, err
	}
	return kl, nil
}

// portOf is the port of "ip:port".
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// capFor is how long the lab lets the call of a row predicted as p wait: --cap for a call the
// model expects to hang, and for one it expects to end, at least twice its time and half a
// second more, so that a loaded machine that slows a handshake past --cap does not turn an
// end the model expects into a hang. A call that hangs where the model expects it to end is
// still shown as one, half a second later or more.
func (k *PreFirst) capFor(p model.Prediction) time.Duration {
	if p.Outcome == vocab.Hang || p.Total == model.Forever {
		return k.Cap
	}
	return max(k.Cap, 2*p.Total+500*time.Millisecond)
}

// errLabCap is the cause with which the lab ends a call that nothing else ends.
var errLabCap = errors.New("the lab's cap")

// Run implements Experiment.
func (k *PreFirst) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(k, opt, func(run *results.Run) error {
		kl, err := newKLab(k.LookupDelay, k.trickle())
		if err != nil {
			return err
		}
		defer kl.close()
		// Fault by fault, every client in turn: a reader compares the clients on one fault, and
		// the fault is said once, as the group's line.
		rows, profiles := k.kRows(), k.Profiles()
		total := len(rows) * len(profiles)
		for ri, row := range rows {
			for pi, profile := range profiles {
				out, call, err := k.runRow(ctx, opt, kl, profile, row, ri*len(profiles)+pi+1, total)
				if err != nil {
					return err
				}
				run.Rows = append(run.Rows, out)
				run.Calls = append(run.Calls, call)
			}
		}
		return nil
	})
}

// runRow makes one call of profile for row and returns its row.
func (k *PreFirst) runRow(ctx context.Context, opt Options, kl *kLab, profile string, row kRow, n, total int) (out results.Row, call results.Call, err error) {
	dns := kl.dns
	if row.slow {
		dns = kl.slow
	}
	s := lab.Spec{ConnectTimeout: k.ConnectTimeout, ReadTimeout: k.ReadTimeout, Resolver: dns.Resolver(), TLS: kl.roots}
	if row.handshake {
		handshakeLimit(profile, &s, k.HandshakeTimeout)
	}
	b, err := lab.Build(profile, s)
	if err != nil {
		return out, call, err
	}
	defer b.C.Close()
	p, err := model.PredictPreFirst(row.fault, b.Limits)
	if err != nil {
		return out, call, err
	}
	name := row.label + ": " + profile
	opt.progress(p.Total, "%s · row %d/%d: %s", k.Info().Name, n, total, name)

	cctx, cancel := context.WithTimeoutCause(ctx, k.capFor(p), errLabCap)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, "https://"+row.host+":"+strconv.Itoa(kl.port)+"/", nil)
	if err != nil {
		return out, call, err
	}
	before := kl.accepted()
	res, _ := b.C.Do(cctx, req)
	if err := ctx.Err(); err != nil {
		return out, call, err
	}
	capped := errors.Is(context.Cause(cctx), errLabCap)
	// A stalled listener counts the connection when it accepts it: by the time the client has
	// given up, every connection it opened is counted.
	conns := kl.accepted() - before

	// The connections go in the note too: the table writes a count of 0 as "pooled conn".
	note := fmt.Sprintf("%s, %s (model %d, %d); %s", vocab.Plural(len(res.Attempts), "attempt"), vocab.Plural(conns, "connection"),
		len(p.Attempts), p.Connects, k.bounds(p, b.Limits, row))
	var hung lab.Judge
	if capped {
		note += fmt.Sprintf("; still waiting at the lab's cap, %v", k.capFor(p))
		hung = lab.StillHung()
	}
	out = lab.Judged(name, lab.Called(p, res), lab.Connections(results.Count(p.Connects), results.Count(conns)), lab.Saw(note), hung)
	out.ID = results.Slug(profile + ": " + row.label) // the id the row had when named client first
	return out, lab.Timeline(name, res, 0), nil
}

// handshakeLimit makes d the limit that bounds profile's handshake in s: the library's own
// setting where it has one (HttpClient 5's and 4.5's socket timeout, net/http's
// TLSHandshakeTimeout), else the one its rules make the handshake's: OkHttp's and
// HttpURLConnection's read timeout, the JDK HttpClient's connect timeout (with no request
// timeout, which would bound it too).
func handshakeLimit(profile string, s *lab.Spec, d time.Duration) {
	p, _ := lab.LookupProfile(profile) // the experiment's own profiles
	switch p.Rules(*s).PreFirst.Handshake.Limit {
	case rules.LimitRead:
		s.ReadTimeout = d
	case rules.LimitShorterConnectRead:
		s.ConnectTimeout, s.ReadTimeout = d, 0
	default:
		s.TLSHandshakeTimeout = d
	}
}

// bounds says which limit the profile's rules give the row's step.
func (k *PreFirst) bounds(p model.Prediction, l model.Limits, row kRow) string {
	r := model.PreFirstRuleOf(l)
	switch row.fault.Fault {
	case model.HandshakeStall, model.SlowHandshake:
		b := r.Handshake(l)
		if b.Limit == 0 {
			return "handshake: nothing bounds it (" + b.Name + ": not set)"
		}
		kind := "a deadline"
		if b.PerRead {
			kind = "per read"
		}
		return fmt.Sprintf("handshake: %s %v, %s; after it: %s", b.Name, b.Limit, kind, r.AfterHandshakeTimeout)
	case model.SlowLookup:
		b := r.Lookup(l)
		if b.Limit == 0 {
			return "lookup: " + b.Name
		}
		return fmt.Sprintf("lookup: %s %v", b.Name, b.Limit)
	case model.BadCertificate:
		return "after a certificate failure: " + string(r.AfterCertificate)
	case model.ProtocolFailure:
		return "after a protocol failure: " + string(r.AfterProtocol)
	}
	return "after a failed lookup: " + string(r.AfterDNSError)
}
