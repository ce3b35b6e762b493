package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// A name lookup reaches the system's resolver, which a command cannot be pointed at with a
// port: glibc's (the JVM's, Python's, Node's, curl's) and Go's read the nameservers of
// /etc/resolv.conf, on port 53. So the lookup scenarios run the command inside namespaces of
// its own (internal/netns): a network namespace where lo is up, labrun's DNS answers on
// 127.0.0.1:53 and the fake server listens, and a mount namespace where /etc/resolv.conf
// names that server and /etc/nsswitch.conf sends host names to files and DNS alone. The
// host's files and network are left as they are.

// lookupHost is the name the command calls in the lookup scenarios, missingHost the one that
// does not exist; lookupDelay is how long the slow resolver holds its answers, short of
// glibc's 5 s timeout per try.
const (
	lookupHost  = "labrun.test"
	missingHost = "missing.labrun.test"
	lookupDelay = 2 * time.Second
)

// lookupJob is the namespace job of the lookup scenarios.
const lookupJob = "probe.lookup"

// Jobs are work a binary runs in a network namespace child of its own, by name: each decodes
// its input and returns its output, which the parent reads as JSON.
type Jobs map[string]func(ctx context.Context, input json.RawMessage) (any, error)

// NamespaceJobs returns the namespace jobs of the probe, for a binary that runs a probe to
// dispatch first thing in its main (labrun's does): the lookup scenarios' namespace child;
// the helper that every command runs under (internal/reap) is dispatched with them.
func NamespaceJobs() Jobs {
	return Jobs{lookupJob: netns.Func(runLookup), mixedJob: netns.Func(runMixed)}
}

// lookupInput is what the namespace job is asked: the command, the call and the fault.
type lookupInput struct {
	Args, Env []string
	Call      Call
	Cap       time.Duration
	Fault     model.PreFirstFault
	Delay     time.Duration
	Path      string
}

// lookupSeen is what the job saw: the command's run and the server's and resolver's logs.
type lookupSeen struct {
	Exec     Exec
	Requests []fakesrv.Request
	Conns    []fakesrv.Conn
	Queries  int
}

// observeLookup runs cmd in namespaces of its own against a resolver with sc's fault. Where
// the kernel refuses the namespaces, the scenario is skipped with the reason.
func observeLookup(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	obs := observation{sc: sc}
	if err := netns.Available(); err != nil {
		obs.skipped = "no namespaces of its own for the command's resolver here: " + err.Error()
		return obs, nil
	}
	in := lookupInput{Args: cmd.Args, Env: cmd.Env, Cap: sc.Cap, Fault: sc.pre.Fault, Delay: sc.pre.LookupDelay, Path: sc.path,
		Call: Call{Method: sc.Method, Calls: sc.Calls, Concurrency: sc.Concurrency, Pause: sc.Pause}}
	jctx, cancel := context.WithTimeout(ctx, sc.Cap+stallMargin+lookupSetup)
	defer cancel()
	var seen lookupSeen
	if err := netns.RunMounted(jctx, lookupJob, in, &seen); err != nil {
		switch {
		case ctx.Err() != nil:
			return obs, ctx.Err()
		case errors.Is(err, netns.ErrUnavailable): // the mount namespace, refused where the others are not
			obs.skipped = "no namespaces of its own for the command's resolver here: " + err.Error()
			return obs, nil
		}
		return obs, err
	}
	obs.exec, obs.reqs, obs.conns, obs.queries = seen.Exec, seen.Requests, seen.Conns, seen.Queries
	return obs, nil
}

// lookupSetup bounds the namespace child's own start and its servers', besides the command.
const lookupSetup = 10 * time.Second

// runLookup is the namespace job: it builds the network and the files, runs the command and
// collects the logs.
func runLookup(ctx context.Context, in lookupInput) (lookupSeen, error) {
	var seen lookupSeen
	if err := netns.LoopbackUp(); err != nil {
		return seen, err
	}
	srv, err := fakesrv.New(fakesrv.WithMaxDuration(in.Cap + stallMargin))
	if err != nil {
		return seen, err
	}
	defer srv.Close()
	opts := []fakesrv.DNSOption{fakesrv.DNSDelay(in.Delay)}
	host := lookupHost
	switch in.Fault {
	case model.ServFail:
		opts = append(opts, fakesrv.DNSServFail(lookupHost))
	case model.NXDomain:
		host = missingHost
	}
	dns, _, stop, err := systemResolver(map[string][]string{lookupHost: {"127.0.0.1"}}, opts...)
	if err != nil {
		return seen, err
	}
	defer stop()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	in.Call.URL = "http://" + net.JoinHostPort(host, port) + in.Path
	if seen.Exec, err = (Command{Args: in.Args, Env: in.Env}).run(ctx, in.Call, in.Cap); err != nil {
		return seen, err
	}
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if settled(srv) {
			break
		}
	}
	// Closing the resolver sends the answers it still holds, which Queries then counts.
	_ = dns.Close()
	seen.Requests, seen.Conns, seen.Queries = srv.Requests(), srv.Conns(), dns.Queries()
	return seen, nil
}

// systemResolver is, inside the namespace job, the system's resolver answered by labrun: a
// fakesrv.DNS with records and opts, relayed from 127.0.0.1:53, named by /etc/resolv.conf, with
// /etc/nsswitch.conf sending host names to files and DNS alone; dir is a directory of the job's
// for other files, removed by stop, which also stops the resolver.
func systemResolver(records map[string][]string, opts ...fakesrv.DNSOption) (_ *fakesrv.DNS, dir string, stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dns, err := fakesrv.NewDNS(records, opts...)
	if err != nil {
		return nil, "", nil, err
	}
	undo = append(undo, func() { dns.Close() })
	fwd, err := forwardDNS("127.0.0.1:53", dns.Addr)
	if err != nil {
		return nil, "", nil, err
	}
	undo = append(undo, func() { fwd.Close() })
	if dir, err = os.MkdirTemp("", "labrun-probe-lookup-"); err != nil {
		return nil, "", nil, err
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	if err = netns.BindFile(dir, "/etc/resolv.conf", []byte("nameserver 127.0.0.1\n")); err != nil {
		return nil, "", nil, err
	}
	if nss, rerr := os.ReadFile("/etc/nsswitch.conf"); rerr == nil {
		if err = netns.BindFile(dir, "/etc/nsswitch.conf", filesAndDNS(nss)); err != nil {
			return nil, "", nil, err
		}
	}
	return dns, dir, stop, nil
}

// filesAndDNS is an nsswitch.conf whose hosts line is "files dns": a module that asks a
// daemon of the host (systemd-resolved, mDNS) would bypass the namespace's resolver.
func filesAndDNS(nss []byte) []byte {
	var out []string
	found := false
	for _, line := range strings.Split(string(nss), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "hosts:" {
			line, found = "hosts: files dns", true
		}
		out = append(out, line)
	}
	if !found {
		out = append(out, "hosts: files dns")
	}
	return []byte(strings.Join(out, "\n"))
}

// dnsForwarder relays UDP datagrams from a fixed address (port 53, where a system resolver
// looks) to a fakesrv.DNS on another port, and its answers back: fakesrv.DNS takes a free port.
type dnsForwarder struct {
	pc   net.PacketConn
	to   string
	done chan struct{}
}

// forwardAnswerWait bounds the wait for one answer: the slow resolver's delay and some.
const forwardAnswerWait = lookupDelay + 5*time.Second

func forwardDNS(listen, to string) (*dnsForwarder, error) {
	pc, err := net.ListenPacket("udp4", listen)
	if err != nil {
		return nil, fmt.Errorf("probe: DNS on %s: %w", listen, err)
	}
	f := &dnsForwarder{pc: pc, to: to, done: make(chan struct{})}
	go f.serve()
	return f, nil
}

func (f *dnsForwarder) serve() {
	defer close(f.done)
	buf := make([]byte, 4096)
	for {
		n, from, err := f.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go f.relay(append([]byte(nil), buf[:n]...), from)
	}
}

// relay sends one query on a socket of its own and its answer back to the client.
func (f *dnsForwarder) relay(q []byte, from net.Addr) {
	c, err := net.Dial("udp4", f.to)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(forwardAnswerWait))
	if _, err := c.Write(q); err != nil {
		return
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return
	}
	_, _ = f.pc.WriteTo(buf[:n], from)
}

// Close stops the forwarder.
func (f *dnsForwarder) Close() error {
	err := f.pc.Close()
	<-f.done
	return err
}

// lookupMs is a lookup scenario's time: the command's own report of its first call, or its
// wall time less the instant answer's; approx says which.
func lookupMs(x Exec, baseline time.Duration) (d time.Duration, approx, ok bool) {
	for _, r := range x.Reports {
		if r.Call == 1 && r.HasMs {
			return time.Duration(r.Ms * float64(time.Millisecond)), false, true
		}
	}
	if baseline <= 0 || x.Killed {
		return 0, false, false
	}
	return max(0, x.Ended.Sub(x.Started)-baseline), true, true
}
