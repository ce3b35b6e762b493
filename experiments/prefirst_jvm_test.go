package experiments

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// kJavaRow is one of exp-k's rows as a Java program runs it: the listeners of its host name,
// one per address (none: the name is not in the hosts file, NXDOMAIN), the program's flags and
// the model's limits for the same settings.
type kJavaRow struct {
	name   string
	addrs  []fakesrv.TLSFault
	fault  model.PreFirst
	flags  string
	limits model.Limits
	// margin replaces kJavaMargin for a row that also waits on a kernel timer (the reason
	// is beside the row).
	margin time.Duration
}

// kJavaMargin is how far a JVM's time may be from the model's beyond what the run's control
// explains: the JVM's timers and thread hand-offs, well above labrun's client's. Each new
// connection also costs the JVM its own set-up (a client, a socket, an SSLEngine and its
// ClientHello: 10 to 25 ms here, 45 ms on a slower, loaded machine), which the model counts
// as free: the control measures it in the same JVM and run, a call with a good handshake
// (model: 0 ms), and a row may be later by that much per connection.
const kJavaMargin = 40 * time.Millisecond

// kJavaControls is how many control calls each program makes; the slowest is the JVM's cost
// of a connection, so that one lucky call does not make it small.
const kJavaControls = 3

// kJavaTrickle is the slow handshake of the Java rows: 300 ms in all, each gap well under
// the read timeouts.
var kJavaTrickle = fakesrv.Trickle{Gap: 20 * time.Millisecond, Bytes: 15}

// kJavaRows are the rows each library runs; a row with cap= comes last.
func kJavaRows(profile string) []kJavaRow {
	const c, r, h = 100 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond
	stall := model.PreFirst{Fault: model.HandshakeStall}
	stall2 := model.PreFirst{Fault: model.HandshakeStall, Routes: 2}
	slow := model.PreFirst{Fault: model.SlowHandshake, ByteGap: kJavaTrickle.Gap, Bytes: kJavaTrickle.Bytes}
	slowAddr := []fakesrv.TLSFault{fakesrv.TLSSlowHandshake}
	stallAddr, stall2Addr := []fakesrv.TLSFault{fakesrv.TLSStall}, []fakesrv.TLSFault{fakesrv.TLSStall, fakesrv.TLSStall}
	bad := model.PreFirst{Fault: model.BadCertificate}
	shared := []kJavaRow{
		{name: "certificate of an unknown CA", addrs: []fakesrv.TLSFault{fakesrv.TLSUnknownCA}, fault: bad},
		{name: "certificate for another host name", addrs: []fakesrv.TLSFault{fakesrv.TLSWrongHost}, fault: bad},
		{name: "first address a wrong-host certificate, second good", addrs: []fakesrv.TLSFault{fakesrv.TLSWrongHost, fakesrv.TLSGood},
			fault: model.PreFirst{Fault: model.BadCertificate, Routes: 2, Bad: 1}},
		{name: "TLS 1.0 only, on both of two addresses", addrs: []fakesrv.TLSFault{fakesrv.TLSOldVersion, fakesrv.TLSOldVersion},
			fault: model.PreFirst{Fault: model.ProtocolFailure, Routes: 2}},
		{name: "NXDOMAIN", fault: model.PreFirst{Fault: model.NXDomain}},
	}
	// typical is the rows every library runs, with its usual flags and their limits.
	typical := func(flags string, l model.Limits) []kJavaRow {
		for i := range shared {
			shared[i].flags, shared[i].limits = flags, l
		}
		return shared
	}
	switch profile {
	case ProfileHC5:
		l := model.Limits{Rules: rules.HC5(rules.HC5Settings{}), ConnectTimeout: c, ReadTimeout: r}
		so := l
		so.TLSHandshakeTimeout = h
		common := typical("connect=100,response=100", l)
		return append(append([]kJavaRow{
			{name: "stalled handshake on both of two addresses, SocketConfig soTimeout 150 ms", addrs: stall2Addr,
				fault: stall2, flags: "connect=100,response=100,so=150", limits: so},
			{name: "stalled handshake, TlsConfig handshakeTimeout 150 ms", addrs: stallAddr,
				fault: stall, flags: "connect=100,response=100,handshake=150", limits: so},
			{name: "handshake answered byte by byte, TlsConfig handshakeTimeout 150 ms (per read)", addrs: slowAddr,
				fault: slow, flags: "connect=100,response=100,handshake=150", limits: so},
		}, common...),
			kJavaRow{name: "stalled handshake, connect and response timeouts only (capped at 600 ms)", addrs: []fakesrv.TLSFault{fakesrv.TLSStall},
				fault: stall, flags: "connect=100,response=100,cap=600", limits: l})
	case ProfileOkHttp:
		l := model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: c, ReadTimeout: r}
		common := typical("connect=100,read=100", l)
		return append([]kJavaRow{
			{name: "stalled handshake, connect and read timeouts only", addrs: stallAddr, fault: stall, flags: "connect=100,read=100", limits: l},
			{name: "stalled handshake on both of two addresses", addrs: stall2Addr, fault: stall2, flags: "connect=100,read=100", limits: l},
			// OkHttp 3 leaves TCP_NODELAY off: after this handshake Nagle's algorithm holds
			// the request behind the unacknowledged Finished until the server's delayed ACK
			// (Linux's 40 ms minimum); with TCP_NODELAY on the same row took 311 ms.
			{name: "handshake answered byte by byte, read timeout 100 ms (per read)", addrs: slowAddr, fault: slow, flags: "connect=100,read=100", limits: l,
				margin: kJavaMargin + 40*time.Millisecond},
		}, common...)
	case ProfileJDK:
		l := model.Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: c, ReadTimeout: r}
		common := typical("connect=100,request=100", l)
		return append([]kJavaRow{
			{name: "stalled handshake, connect and request timeouts", addrs: stallAddr, fault: stall, flags: "connect=100,request=100", limits: l},
			{name: "stalled handshake on both of two addresses, connect timeout 150 ms only", addrs: stall2Addr, fault: stall2,
				flags: "connect=150", limits: model.Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: h}},
			{name: "stalled handshake, request timeout 150 ms only", addrs: stallAddr, fault: stall,
				flags: "request=150", limits: model.Limits{Rules: rules.JDK(rules.JDKSettings{}), ReadTimeout: h}},
			{name: "handshake answered byte by byte, connect and request timeouts (deadlines)", addrs: slowAddr, fault: slow,
				flags: "connect=100,request=100", limits: l},
		}, common...)
	case ProfileURLConnection:
		l := model.Limits{Rules: rules.URLConnection(rules.URLConnectionSettings{}), ConnectTimeout: c, ReadTimeout: r}
		common := typical("connect=100,read=100", l)
		return append([]kJavaRow{
			{name: "stalled handshake, connect and read timeouts", addrs: stallAddr, fault: stall, flags: "connect=100,read=100", limits: l},
			{name: "stalled handshake on both of two addresses", addrs: stall2Addr, fault: stall2, flags: "connect=100,read=100", limits: l},
			{name: "handshake answered byte by byte, read timeout 100 ms (per read)", addrs: slowAddr, fault: slow, flags: "connect=100,read=100", limits: l},
		}, common...)
	case ProfileHC4:
		l := model.Limits{Rules: rules.HC4(), ConnectTimeout: c, ReadTimeout: r}
		so := l
		so.TLSHandshakeTimeout = h
		common := typical("connect=100,socket=100", l)
		return append([]kJavaRow{
			{name: "stalled handshake, connect and socket timeouts (the connect timeout as soTimeout)", addrs: stallAddr, fault: stall,
				flags: "connect=100,socket=100", limits: l},
			{name: "stalled handshake on both of two addresses, SocketConfig soTimeout 150 ms", addrs: stall2Addr, fault: stall2,
				flags: "connect=100,socket=100,so=150", limits: so},
			{name: "handshake answered byte by byte, connect timeout 100 ms as soTimeout (per read)", addrs: slowAddr, fault: slow,
				flags: "connect=100,socket=100", limits: l},
		}, common...)
	}
	return nil
}

// kJavaControlFlags are the flags of the control call: those of the rows every library runs
// (the last row without a cap), so that the control builds the same client.
func kJavaControlFlags(rows []kJavaRow) string {
	for i := len(rows) - 1; i >= 0; i-- {
		if !strings.Contains(rows[i].flags, "cap=") {
			return rows[i].flags
		}
	}
	return ""
}

// javaOutcome names what a Java program printed: a status, an exception, a hang.
func javaOutcome(answer string) vocab.Outcome {
	switch answer {
	case "200":
		return vocab.OK
	case "hang":
		return vocab.Hang
	}
	// "!Exception/RootCause": an unresolved address is the JDK HttpClient's failed lookup.
	name, root, _ := strings.Cut(strings.TrimPrefix(answer, "!"), "/")
	switch {
	case root == "UnresolvedAddressException" || name == "UnknownHostException":
		return vocab.DNSError
	case name == "SocketTimeoutException":
		return vocab.ReadTimeout
	case name == "ConnectTimeoutException" || name == "HttpConnectTimeoutException":
		return vocab.ConnectTimeout
	case name == "SSLHandshakeException" || name == "SSLPeerUnverifiedException":
		return vocab.TLSError
	}
	return vocab.Failed
}

// TestPreFirstRealLibraries holds exp-k's rules to HttpClient 5.2.1 and 4.5.14, OkHttp 3.13.1,
// the JDK's HttpClient and HttpsURLConnection: each
// row's host name gets listeners of its own (so that each row's connections are counted apart),
// a hosts file (-Djdk.net.hosts.file) maps the names, and the outcome, the connections and the
// time (within kJavaMargin) must be the model's. The first call warms the JVM's TLS up.
func TestPreFirstRealLibraries(t *testing.T) {
	for _, lib := range []struct {
		profile, source string
		lib             jvm.Library
	}{
		{ProfileHC5, "testdata/PreFirstHC5.java", jvm.HttpClient5},
		{ProfileOkHttp, "testdata/PreFirstOkHttp.java", jvm.OkHttp3},
		{ProfileJDK, "testdata/PreFirstJDK.java", jvm.JDK},
		{ProfileURLConnection, "testdata/PreFirstURLConnection.java", jvm.JDK},
		{ProfileHC4, "testdata/PreFirstHC4.java", jvm.HttpClient4},
	} {
		t.Run(lib.profile, func(t *testing.T) {
			rt := jvm.Require(t, lib.lib)
			twice(t, func(errorf func(string, ...any)) {
				for _, e := range preFirstJVM(t, rt, lib.profile, lib.source, lib.lib) {
					errorf("%s", e)
				}
			})
		})
	}
}

// preFirstJVM runs one library's program over exp-k's rows and returns how it disagrees with
// the model.
func preFirstJVM(t *testing.T, rt jvm.Runtime, profile, source string, lib jvm.Library) (errs []string) {
	t.Helper()
	rows := kJavaRows(profile)
	var names []string
	for i := range rows {
		names = append(names, fmt.Sprintf("row%d.test", i))
	}
	faults, err := fakesrv.NewTLSFaults(append(names, "warm.test")...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, faults.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	var hosts strings.Builder
	port, ip := 0, 1
	listen := func(f fakesrv.TLSFault, name string) *fakesrv.TLSFaultServer {
		addr := fmt.Sprintf("127.0.12.%d", ip)
		ip++
		var s *fakesrv.TLSFaultServer
		var err error
		if f == fakesrv.TLSSlowHandshake {
			s, err = faults.ListenTrickle(addr, port, kJavaTrickle)
		} else {
			s, err = faults.Listen(f, addr, port)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		port = portOf(s.Addr)
		fmt.Fprintf(&hosts, "%s %s\n", addr, name)
		return s
	}
	listen(fakesrv.TLSGood, "warm.test")
	servers := make([][]*fakesrv.TLSFaultServer, len(rows))
	for i, r := range rows {
		for _, f := range r.addrs {
			servers[i] = append(servers[i], listen(f, names[i]))
		}
	}
	hostsFile := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hostsFile, []byte(hosts.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	url := func(name string) string { return "https://" + name + ":" + strconv.Itoa(port) + "/" }
	args := []string{ca, "warm|" + url("warm.test") + "|"}
	for range kJavaControls {
		args = append(args, "control|"+url("warm.test")+"|"+kJavaControlFlags(rows))
	}
	for i, r := range rows {
		args = append(args, strconv.Itoa(i)+"|"+url(names[i])+"|"+r.flags)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := rt.Run(ctx, jvm.Program{Source: source, With: []string{"testdata/PreFirstLab.java"}, Libs: []jvm.Library{lib},
		Props: []string{"jdk.net.hosts.file=" + hostsFile}}, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var perConn time.Duration // the JVM's cost of a connection: the slowest control
	for _, line := range lines {
		if f := strings.Split(line, "|"); len(f) == 3 && f[0] == "control" {
			if f[2] != "200" {
				t.Fatalf("control call: %s", line)
			}
			ms, _ := strconv.Atoi(f[1])
			perConn = max(perConn, time.Duration(ms)*time.Millisecond)
		}
	}
	t.Logf("%s: a good handshake's call takes %v in this JVM", profile, perConn)
	seen := 0
	for _, line := range lines {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			errs = append(errs, fmt.Sprintf("unexpected line %q", line))
			continue
		}
		if f[0] == "warm" || f[0] == "control" {
			if f[2] != "200" {
				t.Fatalf("warm-up call: %s", line)
			}
			continue
		}
		i, err := strconv.Atoi(f[0])
		if err != nil || i < 0 || i >= len(rows) {
			errs = append(errs, fmt.Sprintf("unexpected line %q", line))
			continue
		}
		seen++
		r := rows[i]
		ms, _ := strconv.Atoi(f[1])
		p, err := model.PredictPreFirst(r.fault, r.limits)
		if err != nil {
			t.Fatal(err)
		}
		conns := 0
		for _, s := range servers[i] {
			conns += s.Accepted()
		}
		got := javaOutcome(f[2])
		t.Logf("%s: %s: %d ms %s (%s), %d connections; model %v %s, %d", profile, r.name, ms, got, f[2], conns, p.Total, p.Outcome, p.Connects)
		if got != p.Outcome || conns != p.Connects {
			errs = append(errs, fmt.Sprintf("%s: got %s (%s), %d connections; want %s, %d", r.name, got, f[2], conns, p.Outcome, p.Connects))
		}
		if p.Total != model.Forever {
			margin := cmp.Or(r.margin, kJavaMargin)
			late := margin + time.Duration(p.Connects)*perConn
			if d := time.Duration(ms)*time.Millisecond - p.Total; d < -margin || d > late {
				errs = append(errs, fmt.Sprintf("%s: %d ms, want %v, from %v before to %v after (%d connections at the control's %v, and %v)",
					r.name, ms, p.Total, margin, late, p.Connects, perConn, margin))
			}
		}
	}
	if seen != len(rows) {
		errs = append(errs, fmt.Sprintf("%d rows answered, want %d:\n%s", seen, len(rows), out))
	}
	return errs
}
