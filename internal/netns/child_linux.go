//go:build linux

package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/reap"
	"golang.org/x/sys/unix"
)

// childGrace is the wait for a job ignoring its cancelled ctx.
const childGrace = time.Second

// Child exit codes; a failed job exits 0, its error in the response.
const (
	exitOK          = 0
	exitProtocol    = 2
	exitRefused     = 3 // not in namespaces of its own
	exitOverdue     = 4
	exitUnavailable = 5
)

// MaybeChild runs this process's job if it is a namespace child, returning its exit code and
// child = true; it runs reap.MaybeHelper too. The child refuses (exit 3) outside namespaces of
// its own and stops its job at the parent's deadline.
func MaybeChild(jobs Jobs, stdin io.Reader, stdout, stderr io.Writer) (code int, child bool) {
	if code, helper := reap.MaybeHelper(); helper {
		return code, true
	}
	if os.Getenv(childEnv) == "" {
		return 0, false
	}
	if os.Getenv(launchEnv) != "" {
		return launch(stdin, stdout, stderr), true
	}
	if err := checkChild(); err != nil {
		fmt.Fprintf(stderr, "labrun: netns child: %v\n", err)
		return exitRefused, true
	}
	if err := privateMounts(); err != nil {
		fmt.Fprintf(stderr, "labrun: netns child: %v\n", err)
		return exitRefused, true
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(stdin, maxOutput)).Decode(&req); err != nil {
		fmt.Fprintf(stderr, "labrun: netns child: read request: %v\n", err)
		return exitProtocol, true
	}
	job, ok := jobs[req.Job]
	switch {
	case req.Job == probeJob:
		job, ok = Func(probe), true
	case !ok:
		return reply(stdout, stderr, nil, fmt.Errorf("unknown job %q (known: %s)", req.Job, jobNames(jobs)))
	}

	ctx, cancel := context.WithTimeout(context.Background(), req.Timeout)
	defer cancel()
	type result struct {
		out any
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := job(ctx, req.Input)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return reply(stdout, stderr, r.out, r.err)
	case <-ctx.Done():
	}
	select {
	case r := <-done:
		return reply(stdout, stderr, r.out, r.err)
	case <-time.After(childGrace):
		fmt.Fprintf(stderr, "labrun: netns child: job %s still running %v after its time\n", req.Job, childGrace)
		return exitOverdue, true
	}
}

func reply(stdout, stderr io.Writer, out any, jobErr error) (int, bool) {
	var resp response
	if jobErr != nil {
		resp.Error = jobErr.Error()
	} else {
		raw, err := json.Marshal(out)
		if err != nil {
			resp.Error = fmt.Sprintf("encode output: %v", err)
		}
		resp.Output = raw
	}
	if err := json.NewEncoder(stdout).Encode(resp); err != nil {
		fmt.Fprintf(stderr, "labrun: netns child: write response: %v\n", err)
		return exitProtocol, true
	}
	return exitOK, true
}

func jobNames(jobs Jobs) string {
	names := make([]string, 0, len(jobs))
	for n := range jobs {
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// checkChild refuses unless the thread is in namespaces Run made: network and user namespaces
// not the parent's, the first owned by the second, which maps only root to the parent's uid and
// gid. Otherwise a stray or forged marker run as root could change the host's sysctls.
func checkChild() error {
	parent := strings.Fields(os.Getenv(childEnv))
	if len(parent) != 4 {
		return fmt.Errorf("malformed %s marker %q", childEnv, os.Getenv(childEnv))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	net, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		return fmt.Errorf("read own network namespace: %w", err)
	}
	user, err := os.Readlink("/proc/thread-self/ns/user")
	if err != nil {
		return fmt.Errorf("read own user namespace: %w", err)
	}
	if net == parent[0] || user == parent[1] {
		return fmt.Errorf("refusing: still in the parent's namespaces (%s %s)", net, user)
	}
	for _, m := range []struct{ file, outer string }{{"uid_map", parent[2]}, {"gid_map", parent[3]}} {
		data, err := os.ReadFile("/proc/thread-self/" + m.file)
		if err != nil {
			return fmt.Errorf("read own %s: %w", m.file, err)
		}
		if err := checkIDMap(string(data), m.outer); err != nil {
			return fmt.Errorf("refusing: not in a user namespace of labrun's own: %s %w", m.file, err)
		}
	}
	if os.Getuid() != 0 || os.Getgid() != 0 {
		return fmt.Errorf("refusing: uid %d gid %d, want root of a user namespace of labrun's own", os.Getuid(), os.Getgid())
	}
	owner, err := netOwner()
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/user", &st); err != nil {
		return fmt.Errorf("stat own user namespace: %w", err)
	}
	if owner != st.Ino {
		return errors.New("refusing: the network namespace is not owned by this user namespace")
	}
	return nil
}

// checkIDMap checks that an id map maps only 0 to outer.
func checkIDMap(text, outer string) error {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 1 {
		return fmt.Errorf("has %d lines, want one", len(lines))
	}
	f := strings.Fields(lines[0])
	if len(f) != 3 || f[0] != "0" || f[1] != outer || f[2] != "1" {
		return fmt.Errorf("is %q, want \"0 %s 1\"", strings.Join(f, " "), outer)
	}
	return nil
}

// netOwner is the inode of the user namespace owning the thread's network namespace.
func netOwner() (uint64, error) {
	f, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return 0, fmt.Errorf("open own network namespace: %w", err)
	}
	defer f.Close()
	fd, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return 0, fmt.Errorf("owner of own network namespace: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat owner of own network namespace: %w", err)
	}
	return st.Ino, nil
}

type probeResult struct {
	Kernel string `json:"kernel"`
}

// probe is Available's job: build a pair, set a sysctl, take the pair down.
func probe(ctx context.Context, _ struct{}) (probeResult, error) {
	v, err := ReadSysctl("net.ipv4.tcp_retries2")
	if err != nil {
		return probeResult{}, err
	}
	if err := SetSysctl("net.ipv4.tcp_retries2", v); err != nil {
		return probeResult{}, err
	}
	p, err := NewPair(ctx)
	if err != nil {
		return probeResult{}, err
	}
	if err := p.Close(); err != nil {
		return probeResult{}, err
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return probeResult{}, fmt.Errorf("uname: %w", err)
	}
	return probeResult{Kernel: unix.ByteSliceToString(u.Release[:])}, nil
}
