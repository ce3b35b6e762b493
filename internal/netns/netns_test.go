//go:build linux

package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"golang.org/x/sys/unix"
)

const ms = time.Millisecond

// testJobs are the jobs this package's tests run in namespace children.
func testJobs() Jobs {
	return Jobs{
		"test.echo":   Func(func(ctx context.Context, in string) (string, error) { return "echo " + in, nil }),
		"test.fail":   Func(func(ctx context.Context, in struct{}) (struct{}, error) { return struct{}{}, errors.New("it failed") }),
		"test.hang":   Func(hang),
		"test.sysctl": Func(sysctlJob),
		"test.vanish": Func(vanishJob),
		"test.mounts": Func(mountsJob),
	}
}

// hang ignores its ctx: only a kill ends it.
func hang(ctx context.Context, _ struct{}) (struct{}, error) {
	time.Sleep(time.Minute)
	return struct{}{}, nil
}

// sysctlResult is what sysctlJob read back in its own namespaces.
type sysctlResult struct {
	Retries2, SynRetries, ServerRouteLocalnet string
	Interfaces                                []string
}

// sysctlJob changes the child namespace's TCP sysctls, builds a pair and lets its peer vanish,
// and reads the values back.
func sysctlJob(ctx context.Context, _ struct{}) (sysctlResult, error) {
	var out sysctlResult
	if err := SetSysctl("net.ipv4.tcp_retries2", "3"); err != nil {
		return out, err
	}
	if err := SetSysctl("net.ipv4.tcp_syn_retries", "2"); err != nil {
		return out, err
	}
	p, err := NewPair(ctx)
	if err != nil {
		return out, err
	}
	defer p.Close()
	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	if out.Retries2, err = ReadSysctl("net.ipv4.tcp_retries2"); err != nil {
		return out, err
	}
	if out.SynRetries, err = ReadSysctl("net.ipv4.tcp_syn_retries"); err != nil {
		return out, err
	}
	err = inNamespace(p.server, func() error {
		var err error
		out.ServerRouteLocalnet, err = ReadSysctl("net.ipv4.conf." + serverLinkName + ".route_localnet")
		return err
	})
	if err != nil {
		return out, err
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return out, err
	}
	for _, i := range ifs {
		out.Interfaces = append(out.Interfaces, i.Name)
	}
	return out, nil
}

// vanishResult is what vanishJob measured.
type vanishResult struct {
	Elapsed  time.Duration
	Err      string
	TimedOut bool
	RTO      time.Duration
}

// vanishJob serves HTTP in the server namespace, makes one exchange, lets the peer vanish and
// times the next request with tcp_retries2 = 0: the shortest row of issue 13.
func vanishJob(ctx context.Context, _ struct{}) (vanishResult, error) {
	var out vanishResult
	if err := SetSysctl("net.ipv4.tcp_retries2", "0"); err != nil {
		return out, err
	}
	p, err := NewPair(ctx)
	if err != nil {
		return out, err
	}
	defer p.Close()
	l, err := p.ListenServer("tcp4", ":0")
	if err != nil {
		return out, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	defer srv.Close()
	if !strings.HasPrefix(l.Addr().String(), p.Server.String()+":") {
		return out, fmt.Errorf("listener on %s, want the server address %s", l.Addr(), p.Server)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp4", l.Addr().String())
	if err != nil {
		return out, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	br := bufio.NewReader(c)
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(c, get); err != nil {
		return out, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return out, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != p.Client.String() {
		return out, fmt.Errorf("client address %s, want %s", got, p.Client)
	}
	rc, _ := c.(*net.TCPConn).SyscallConn()
	rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			out.RTO = time.Duration(info.Rto) * time.Microsecond
		}
	})
	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	start := time.Now()
	if _, err = io.WriteString(c, get); err == nil {
		_, err = br.ReadByte()
	}
	out.Elapsed = time.Since(start)
	if err != nil {
		out.Err, out.TimedOut = err.Error(), errors.Is(err, syscall.ETIMEDOUT)
	}
	return out, nil
}

// needNamespaces skips the test, with the reason, where namespaces cannot be created.
func needNamespaces(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("namespaces unavailable here: %v", err)
	}
}

// children lists the processes whose parent is this test process.
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process exited meanwhile
		}
		s := string(b)
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, strings.TrimSpace(s[:strings.LastIndexByte(s, ')')+1]))
		}
	}
	return kids
}

// hostState is what a job must leave as it was in the host's namespace.
type hostState struct {
	Sysctls    map[string]string
	Interfaces []string
}

func snapshotHost(t *testing.T) hostState {
	t.Helper()
	st := hostState{Sysctls: map[string]string{}}
	for _, name := range []string{"net.ipv4.tcp_retries2", "net.ipv4.tcp_syn_retries",
		"net.ipv4.conf.all.route_localnet", "net.ipv4.conf.default.route_localnet",
		"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		v, err := ReadSysctl(name)
		if err != nil {
			t.Fatal(err)
		}
		st.Sysctls[name] = v
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		st.Interfaces = append(st.Interfaces, fmt.Sprintf("%d %s %v %v", i.Index, i.Name, i.Flags, addrs))
	}
	return st
}

func TestMaybeChildWithoutMarker(t *testing.T) {
	if code, child := MaybeChild(testJobs(), strings.NewReader(""), io.Discard, io.Discard); child || code != 0 {
		t.Errorf("got (%d, %v), want (0, false) in a process Run did not start", code, child)
	}
}

// TestChildRefusesHostNamespaces: a process marked as a child by mistake, in the namespaces it
// was started in, refuses to run anything, and the helpers refuse too.
func TestChildRefusesHostNamespaces(t *testing.T) {
	host, err := hostNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, host, "refusing")
	// Writing the value the host already has: even a broken guard would change nothing.
	v, err := ReadSysctl("net.ipv4.tcp_retries2")
	if err != nil {
		t.Fatal(err)
	}
	if err := SetSysctl("net.ipv4.tcp_retries2", v); err == nil {
		t.Error("SetSysctl in the host's namespaces: got no error, want a refusal")
	}
	if _, err := NewPair(context.Background()); err == nil {
		t.Error("NewPair in the host's namespaces: got no error, want a refusal")
	}
}

// TestChildRefusesForgedMarker: a marker with made-up ids, in the host's user namespace (or
// any user namespace labrun did not make), runs nothing: the ids differ from the process's
// namespaces, but its user namespace does not map root alone to the marker's uid and gid.
func TestChildRefusesForgedMarker(t *testing.T) {
	uid, gid := fmt.Sprint(os.Getuid()), fmt.Sprint(os.Getgid())
	for _, marker := range []string{
		"net:[1] user:[2] " + uid + " " + gid,
		"net:[1] user:[2] 0 0",
		"net:[1] user:[2] 1000 1000",
		"net:[1] user:[2]",
	} {
		// In the host's user namespace the map is "0 0 4294967295"; in a container's, its own.
		want := "refusing: not in a user namespace of labrun's own: uid_map is"
		if len(strings.Fields(marker)) != 4 {
			want = "malformed"
		}
		expectRefusal(t, marker, want)
	}
}

// expectRefusal runs MaybeChild with marker and checks that it refuses (exit code 3) with
// want on stderr, and runs nothing.
func expectRefusal(t *testing.T, marker, want string) {
	t.Helper()
	t.Setenv(childEnv, marker)
	ran := false
	jobs := Jobs{"test.touch": Func(func(ctx context.Context, _ struct{}) (struct{}, error) {
		ran = true
		return struct{}{}, nil
	})}
	var stdout, stderr strings.Builder
	code, child := MaybeChild(jobs, strings.NewReader(`{"job":"test.touch"}`), &stdout, &stderr)
	if !child || code != exitRefused || ran || stdout.Len() != 0 {
		t.Errorf("%q: got (%d, %v), ran %v, stdout %q; want a refusal (%d) that runs nothing", marker, code, child, ran, stdout.String(), exitRefused)
	}
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("%q: stderr %q does not say %q", marker, stderr.String(), want)
	}
}

func TestCheckIDMap(t *testing.T) {
	for _, tt := range []struct {
		text, outer string
		ok          bool
	}{
		{"         0       1000          1\n", "1000", true},
		{"0 0 1\n", "0", true},
		{"         0          0 4294967295\n", "0", false}, // the initial user namespace
		{"0 1000 1\n", "1001", false},
		{"0 1000 2\n", "1000", false},
		{"1 1000 1\n", "1000", false},
		{"0 1000 1\n1 2000 1\n", "1000", false},
		{"", "1000", false},
	} {
		if err := checkIDMap(tt.text, tt.outer); (err == nil) != tt.ok {
			t.Errorf("checkIDMap(%q, %s) = %v, want ok %v", tt.text, tt.outer, err, tt.ok)
		}
	}
}

func TestHelpersOutsideChild(t *testing.T) {
	v, err := ReadSysctl("net.ipv4.tcp_retries2")
	if err != nil {
		t.Fatal(err)
	}
	if err := SetSysctl("net.ipv4.tcp_retries2", v); err == nil {
		t.Error("SetSysctl outside a child: got no error, want a refusal")
	}
	if _, err := NewPair(context.Background()); err == nil {
		t.Error("NewPair outside a child: got no error, want a refusal")
	}
}

func TestRunInsideChildRefused(t *testing.T) {
	t.Setenv(childEnv, "net:[1] user:[2]")
	err := Run(context.Background(), "test.echo", "x", nil)
	if err == nil || !strings.Contains(err.Error(), "MaybeChild") {
		t.Errorf("got %v, want an error naming MaybeChild", err)
	}
}

func TestSynCount(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := net.Dialer{Control: SynCount(2)}
	c, err := d.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SYNCNT) })
	if gerr != nil || got != 2 {
		t.Errorf("TCP_SYNCNT: got %d (%v), want 2", got, gerr)
	}
	for _, n := range []int{0, MaxSynCount + 1} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("SynCount(%d): no panic, want one", n)
				}
			}()
			SynCount(n)
		}()
	}
}

func TestRun(t *testing.T) {
	needNamespaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got string
	if err := Run(ctx, "test.echo", "hello", &got); err != nil || got != "echo hello" {
		t.Errorf("echo: got %q, %v; want %q", got, err, "echo hello")
	}
	if err := Run(ctx, "test.fail", nil, nil); err == nil || !strings.Contains(err.Error(), "it failed") {
		t.Errorf("fail: got %v, want the job's error", err)
	}
	if err := Run(ctx, "test.nope", nil, nil); err == nil || !strings.Contains(err.Error(), "unknown job") {
		t.Errorf("unknown job: got %v, want an unknown-job error", err)
	}
	if err := Run(ctx, "test.echo", struct{ X int }{1}, &got); err == nil {
		t.Error("wrong input type: got no error, want a decode error")
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left after normal runs: %v", kids)
	}
}

// TestHostUntouched runs a job that changes its namespace's sysctls and builds and vanishes a
// pair, and checks that the host's sysctls and interfaces are as they were, and no child is
// left.
func TestHostUntouched(t *testing.T) {
	needNamespaces(t)
	before := snapshotHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got sysctlResult
	if err := Run(ctx, "test.sysctl", nil, &got); err != nil {
		t.Fatal(err)
	}
	want := sysctlResult{Retries2: "3", SynRetries: "2", ServerRouteLocalnet: "1", Interfaces: []string{"lo", clientLinkName}}
	slices.Sort(got.Interfaces)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inside the child: got %+v, want %+v", got, want)
	}
	if after := snapshotHost(t); !reflect.DeepEqual(after, before) {
		t.Errorf("host changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left: %v", kids)
	}
}

// TestCancelKillsChild cancels a job that ignores its ctx: Run returns at once with the ctx's
// error and leaves no process behind.
func TestCancelKillsChild(t *testing.T) {
	needNamespaces(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*ms, cancel)
	start := time.Now()
	err := Run(ctx, "test.hang", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Run returned %v after the cancel, want at once", took-300*ms)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left after cancel: %v", kids)
	}
	// A deadline ends it the same way.
	ctx, cancel2 := context.WithTimeout(context.Background(), 200*ms)
	defer cancel2()
	if err := Run(ctx, "test.hang", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left after a deadline: %v", kids)
	}
}

// TestVanish measures the shortest row: with tcp_retries2 = 0 a request on a connection whose
// peer vanished gives up at the second expiry of the retransmission timer (the budget, 200 ms,
// counts from the first), 4 RTOs after the request with a tail loss probe: about 0.84 s.
func TestVanish(t *testing.T) {
	needNamespaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got vanishResult
	if err := Run(ctx, "test.vanish", nil, &got); err != nil {
		t.Fatal(err)
	}
	if !got.TimedOut {
		t.Fatalf("got error %q, want the kernel's ETIMEDOUT", got.Err)
	}
	// The RTO is TCP_RTO_MIN plus a round trip far below a tick, rounded up to a tick.
	k := model.Kernel{Tick: got.RTO - model.DataMinRTO, RTO: got.RTO, TLP: true}
	want := k.DataGiveUp(0)
	if margin := want / 4; got.Elapsed < want-margin || got.Elapsed > want+margin {
		t.Errorf("got %v, want %v +- 25%% (RTO %v)", got.Elapsed, want, got.RTO)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left: %v", kids)
	}
}
