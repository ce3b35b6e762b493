package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Scenarios before the first byte of HTTP: a TLS handshake that stalls or fails, served on
// loopback with a CA the command is told to trust (EnvCA), and name lookups that fail or are
// slow, served inside namespaces of the command's own (lookup.go).

// preFirstCap bounds the scenarios that fail at once, and stallCap the stalled handshake,
// which a client with no bound on it waits on until the cap.
const (
	preFirstCap = 5 * time.Second
	stallCap    = 5 * time.Second
)

// preFirstScenarios are the TLS scenarios and the lookups, in the order a probe runs them.
func preFirstScenarios() []Scenario {
	tls := func(name, title string, cap time.Duration, f fakesrv.TLSFault, pf model.PreFirstFault) Scenario {
		return Scenario{Name: name, Title: title, Method: "GET", Calls: 1, Concurrency: 1, Cap: cap, kind: kindTLS,
			path: "/", tlsFault: f, pre: model.PreFirst{Fault: pf}}
	}
	lookup := func(name, title string, pf model.PreFirstFault, delay time.Duration) Scenario {
		return Scenario{Name: name, Title: title, Method: "GET", Calls: 1, Concurrency: 1, Cap: preFirstCap, kind: kindLookup,
			path: "/delay", pre: model.PreFirst{Fault: pf, LookupDelay: delay}}
	}
	// The handshake answered byte by byte: a limit per read longer than the gap never fires,
	// a deadline shorter than the whole trickle does.
	t := fakesrv.DefaultTrickle
	slow := tls("tls-slow-handshake", fmt.Sprintf("a TLS handshake answered one byte every %v for %v", t.Gap, t.Total()), preFirstCap,
		fakesrv.TLSSlowHandshake, model.SlowHandshake)
	slow.pre.ByteGap, slow.pre.Bytes = t.Gap, t.Bytes
	// Two addresses, the first with a wrong-host certificate (mixed.go).
	mixed := tls("tls-mixed", "two addresses: a certificate for another host name, then a good one", preFirstCap, "",
		model.BadCertificate)
	mixed.pre.Routes, mixed.pre.Bad, mixed.path = 2, 1, "/"
	return []Scenario{
		tls("tls-good", "a certificate of the CA in $"+EnvCA+" for the host", preFirstCap, fakesrv.TLSGood, ""),
		tls("tls-stall", "a TLS handshake the server never answers", stallCap, fakesrv.TLSStall, model.HandshakeStall),
		slow,
		tls("tls-unknown-ca", "a certificate of a CA the client does not trust", preFirstCap, fakesrv.TLSUnknownCA, model.BadCertificate),
		tls("tls-wrong-host", "a certificate for another host name", preFirstCap, fakesrv.TLSWrongHost, model.BadCertificate),
		tls("tls-expired", "a certificate of the CA that expired an hour ago", preFirstCap, fakesrv.TLSExpired, model.BadCertificate),
		tls("tls-incomplete-chain", "a certificate whose intermediate the server does not send", preFirstCap, fakesrv.TLSIncompleteChain, model.BadCertificate),
		tls("tls-old-version", "a server that speaks TLS 1.0 at most", preFirstCap, fakesrv.TLSOldVersion, model.ProtocolFailure),
		mixed,
		lookup("nxdomain", "a host name that does not exist (NXDOMAIN)", model.NXDomain, 0),
		lookup("slow-lookup", "a resolver that answers after "+lookupDelay.String(), model.SlowLookup, lookupDelay),
		lookup("servfail", "a resolver that fails (SERVFAIL)", model.ServFail, 0),
	}
}

// predictPreFirst is the model's expectation of a scenario before the first byte under l.
func predictPreFirst(sc Scenario, l model.Limits, horizon time.Duration) expectation {
	if sc.pre.Fault == "" {
		// Nothing goes wrong: the handshake and the answer are instant, as the instant
		// answer's are.
		p := model.Predict(model.Downstream{}, l, true, 0)
		x := expectation{outcome: vocab.Failed, executions: count(p.Executions), conns: count(p.Connects)}
		if p.Outcome == vocab.OK {
			x.outcome = vocab.OK
		}
		return x
	}
	p, err := model.PredictPreFirst(sc.pre, l)
	if err != nil {
		return expectation{skip: err.Error()}
	}
	if tie := preFirstTie(sc.pre, l); tie != "" {
		return expectation{skip: tie}
	}
	x := expectation{outcome: vocab.Failed, executions: count(p.Executions), conns: count(p.Connects)}
	switch {
	case p.Outcome == vocab.Hang || p.Total > horizon:
		x.outcome = vocab.Hang
		return x
	case p.Outcome == vocab.OK:
		x.outcome = vocab.OK
	}
	// The time that tells the limits apart: when the client left the stalled handshake, and
	// how long a slow lookup's call took.
	if sc.pre.Fault == model.HandshakeStall || sc.pre.Fault == model.SlowLookup {
		left := p.Total
		if sc.pre.Fault == model.HandshakeStall && len(p.Attempts) > 0 {
			left = p.Attempts[0].End // the first connection's departure: the attempt's limit
			bound := model.PreFirstRuleOf(l).Handshake(l).Limit
			if cut := p.Attempts[0].Outcome == vocab.Deadline && len(p.Attempts) > 1; cut && l.Rules.Connect.DetachedDial {
				// The abandoned dial keeps its handshake until its own bound or the call's end.
				left = p.Total
				if bound > 0 && bound < p.Total {
					left = bound
				}
				x.leftAtEnd = left == p.Total
			}
		}
		x.left = &left
	}
	if r := model.PreFirstRuleOf(l); sc.pre.Fault == model.HandshakeStall {
		// A limit per read starts with the handshake's first read, after the ClientHello is
		// sent; a deadline from the connect (the JDK's connect timer) before it, which a
		// JVM builds in tens of milliseconds.
		x.fromConnect = !r.Handshake(l).PerRead
	}
	return x
}

// tieMargin is how close two of a call's instants may fall before which one comes first is a
// race the row cannot judge: a timer starts at the socket's assignment or connect, a trickle at
// the ClientHello's arrival, a retry after a wait, some milliseconds apart either way.
const tieMargin = 100 * time.Millisecond

// preFirstTie says why a slow handshake's or slow lookup's row is not judged when its end
// falls within tieMargin of an instant the model plays against it: a limit on the whole step
// (not each read) firing, the deadline, or a retry's start while the dial its attempt left
// goes on (rules.Connect.DetachedDial: the retry takes that connection or dials its own).
// "" when none does.
func preFirstTie(f model.PreFirst, l model.Limits) string {
	r := model.PreFirstRuleOf(l)
	var end time.Duration
	var b rules.Bound
	var what string
	switch f.Fault {
	case model.SlowHandshake:
		end, b, what = time.Duration(f.Bytes)*f.ByteGap, r.Handshake(l), "the handshake's last byte"
	case model.SlowLookup:
		end, b, what = f.LookupDelay, r.Lookup(l), "the lookup's answer"
	default:
		return ""
	}
	near := func(d time.Duration) bool { return d > 0 && (d-end).Abs() <= tieMargin }
	name := ""
	switch {
	case !b.PerRead && near(b.Limit):
		name = b.Name + " (" + b.Limit.String() + ")"
	case near(l.Deadline):
		name = "the deadline (" + l.Deadline.String() + ")"
	case near(l.AttemptTimeout):
		name = "the attempt's timeout (" + l.AttemptTimeout.String() + ")"
	case l.Rules.Retry.On && l.Rules.Connect.DetachedDial:
		p, err := model.PredictPreFirst(f, l)
		if err != nil {
			return ""
		}
		for i, a := range p.Attempts {
			if i > 0 && near(a.Start) {
				name = fmt.Sprintf("attempt %d's start (%v), while the first attempt's dial goes on,", i+1, a.Start)
				break
			}
		}
	}
	if name == "" {
		return ""
	}
	return fmt.Sprintf("not judged: %s and %s (%v) fall within %v of each other: either may come first", name, what, end, tieMargin)
}

// preFirstSeen is what the server side saw of a scenario before the first byte.
type preFirstSeen struct {
	conns, requests int
	// left is, for the stalled handshake, from the ClientHello's arrival to the client's
	// leaving, and leftConnect from the TCP accept; nil when the client did not leave before
	// the cap.
	left, leftConnect *time.Duration
	how               fakesrv.ConnEnd
}

// observeTLS runs cmd against a TLS fault listener on loopback, with the lab's CA in a file
// the command is pointed at by EnvCA.
func observeTLS(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	if sc.pre.Routes > 1 {
		return observeMixed(ctx, cmd, sc)
	}
	obs := observation{sc: sc}
	faults, err := fakesrv.NewTLSFaults()
	if err != nil {
		return obs, err
	}
	dir, err := os.MkdirTemp("", "labrun-probe-ca-")
	if err != nil {
		return obs, err
	}
	defer os.RemoveAll(dir)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, faults.CAPEM(), 0o600); err != nil {
		return obs, err
	}
	call := Call{Method: sc.Method, Calls: sc.Calls, Concurrency: sc.Concurrency, CA: caFile}
	if sc.tlsFault == fakesrv.TLSStall {
		st, err := newStallListener()
		if err != nil {
			return obs, err
		}
		defer st.close()
		call.URL = "https://" + st.ln.Addr().String() + sc.path
		if obs.exec, err = cmd.run(ctx, call, sc.Cap); err != nil {
			return obs, err
		}
		st.close() // the command is gone: its connections' ends have arrived
		obs.pre = st.seen(obs.exec)
		return obs, nil
	}
	srv, err := faults.Listen(sc.tlsFault, "127.0.0.1", 0)
	if err != nil {
		return obs, err
	}
	defer srv.Close()
	call.URL = srv.URL + sc.path
	if obs.exec, err = cmd.run(ctx, call, sc.Cap); err != nil {
		return obs, err
	}
	obs.pre = preFirstSeen{conns: srv.Accepted(), requests: srv.Requests()}
	return obs, nil
}

// stallListener accepts TCP connections on loopback, reads what the client sends (its
// ClientHello) and never answers, and logs when the first byte came and when the client left.
type stallListener struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex // guards conns, open and closed
	conns  []stalled
	open   map[net.Conn]struct{}
	closed bool
}

// stalled is one connection of a stallListener.
type stalled struct {
	accepted     time.Time
	hello, ended time.Time // zero: no byte came; still open
	how          fakesrv.ConnEnd
}

func newStallListener() (*stallListener, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &stallListener{ln: ln, open: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *stallListener) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if i, ok := s.track(c); ok {
			go s.hold(c, i)
		}
	}
}

// track logs a new connection and returns its index; after close it closes c instead.
func (s *stallListener) track(c net.Conn) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return 0, false
	}
	s.conns = append(s.conns, stalled{accepted: time.Now()})
	s.open[c] = struct{}{}
	s.wg.Add(1)
	return len(s.conns) - 1, true
}

// hold reads c until the client leaves or close closes it, and logs the times.
func (s *stallListener) hold(c net.Conn, i int) {
	defer s.wg.Done()
	buf := make([]byte, 4096)
	var hello time.Time
	var err error
	for {
		var n int
		n, err = c.Read(buf)
		if n > 0 && hello.IsZero() {
			hello = time.Now()
		}
		if err != nil {
			break
		}
	}
	end := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, c)
	c.Close()
	s.conns[i].hello = hello
	if s.closed {
		return // labrun closed it: the client had not left
	}
	s.conns[i].ended = end
	s.conns[i].how = fakesrv.ConnFIN
	if errors.Is(err, syscall.ECONNRESET) {
		s.conns[i].how = fakesrv.ConnRST
	} else if !errors.Is(err, io.EOF) {
		s.conns[i].how = ""
	}
}

// close stops the listener, closes the connections still open and waits for its goroutines.
// It can be called more than once.
func (s *stallListener) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.ln.Close()
		for c := range s.open {
			c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// seen is what the listener saw of x's run: every connection, and when the client left the
// first one, unless that was labrun killing the command.
func (s *stallListener) seen(x Exec) preFirstSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := preFirstSeen{conns: len(s.conns)}
	if len(s.conns) == 0 {
		return out
	}
	c := s.conns[0]
	if c.hello.IsZero() || c.ended.IsZero() || (x.Killed && !c.ended.Before(x.KilledAt)) {
		return out
	}
	d, dc := c.ended.Sub(c.hello), c.ended.Sub(c.accepted)
	out.left, out.leftConnect, out.how = &d, &dc, c.how
	return out
}

// untrusted says why the certificate scenarios are not judged, the good one's words first:
// the command failed on the certificate it was told to trust, so it does not read
// $LABRUN_CA (a breach of the protocol, not a behaviour), and its failure on a bad
// certificate says nothing. "" when it succeeded there or it was not run.
func untrusted(obs []observation, meas []measures) (good, bad string) {
	for i, o := range obs {
		if o.sc.kind == kindTLS && o.sc.pre.Fault == "" && o.skipped == "" && meas[i].outcome != vocab.OK {
			return "not judged: the command failed on a certificate of the CA in $" + EnvCA + ": it does not trust that CA; " +
					"have the client trust the file $" + EnvCA + " names (docs/probe.md shows how each shipped probe does)",
				"not judged: the command failed on tls-good, a certificate of the CA in $" + EnvCA + ": it does not trust that CA"
		}
	}
	return "", ""
}

// stallTimes are a TLS row's expected and measured times: the first connection's departure
// against the first attempt's limit, and when it agrees and a retry layer tried again, the
// whole call as the command reported it against the model's (its waits' band, as
// statusTimes).
func stallTimes(x expectation, m measures) (want, got, tol *float64) {
	want, got = msPtr(x.left), msPtr(m.left)
	switch {
	case x.left == nil || m.left == nil || !x.leftAtEnd && (*m.left-*x.left).Abs() > statusTolerance:
		return want, got, nil
	case x.total == nil || x.totalMax == nil || m.call == nil || x.outcome == vocab.Hang || x.conns == nil || *x.conns < 2:
		return want, got, nil
	}
	half := (*x.totalMax - *x.total) / 2
	return results.Ms(*x.total + half), results.Ms(*m.call), results.Ms(half + statusTolerance + time.Duration(*x.conns-1)*followTolerance)
}
