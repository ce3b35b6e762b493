//go:build linux

package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Output limits: a child writing more is broken.
const (
	maxOutput = 4 << 20
	maxStderr = 8 << 10
)

const probeTimeout = 20 * time.Second

// availability caches Available's probe, a process start.
var availability = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	return Run(ctx, probeJob, nil, nil)
})

// Available reports whether Run works here: namespaces, their TCP sysctls and a veth pair; the
// error matches ErrUnavailable. The first call starts a child (the binary must dispatch
// MaybeChild); later calls are cached.
func Available() error { return availability() }

// Run runs job in a namespace child, input and output (a pointer; nil discards) as JSON, and
// returns once the child is reaped. When ctx is done it kills the child's process group and
// returns an error matching ctx.Err(); namespaces die with their last process. The child also
// dies with its parent and stops at ctx's deadline (or MaxJobTime).
func Run(ctx context.Context, job string, input, output any) error {
	return run(ctx, job, input, output, false)
}

// run is Run; with mounts, the child gets its own mount namespace.
func run(ctx context.Context, job string, input, output any, mounts bool) error {
	if os.Getenv(childEnv) != "" {
		return fmt.Errorf("netns: run %s: called inside a namespace child: the binary must call MaybeChild before anything else", job)
	}
	req := request{Job: job, Timeout: MaxJobTime}
	if dl, ok := ctx.Deadline(); ok {
		req.Timeout = time.Until(dl)
	}
	if input != nil {
		raw, err := json.Marshal(input)
		if err != nil {
			return fmt.Errorf("netns: run %s: encode input: %w", job, err)
		}
		req.Input = raw
	}
	stdin, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("netns: run %s: encode request: %w", job, err)
	}
	host, err := hostNamespaces()
	if err != nil {
		return fmt.Errorf("netns: run %s: %w", job, err)
	}

	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, maxStderr
	// A small launcher clones the child: copying a large process's page tables would stall the
	// experiments running beside.
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{os.Args[0]}
	cmd.Env = append(os.Environ(), childEnv+"="+host, launchEnv+"=1")
	if mounts {
		mnt, err := os.Readlink("/proc/thread-self/ns/mnt")
		if err != nil {
			return fmt.Errorf("netns: run %s: read own mount namespace: %w", job, err)
		}
		cmd.Env = append(cmd.Env, mountEnv+"="+mnt)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// one kill reaches launcher and child
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second

	// Pdeathsig follows the starting thread: it stays locked until the child is reaped.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()

	if ctx.Err() != nil {
		return fmt.Errorf("netns: run %s: %w", job, context.Cause(ctx))
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == exitUnavailable {
			return fmt.Errorf("netns: run %s: %w%s", job, ErrUnavailable, stderr.note())
		}
		if errors.As(err, &ee) || errors.Is(err, exec.ErrWaitDelay) {
			return fmt.Errorf("netns: run %s: child failed: %w%s", job, err, stderr.note())
		}
		return fmt.Errorf("netns: run %s: start child: %w: %w", job, ErrUnavailable, err)
	}
	var resp response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return fmt.Errorf("netns: run %s: decode child output: %w%s", job, err, stderr.note())
	}
	if resp.Error != "" {
		if job == probeJob {
			return fmt.Errorf("netns: %w: %s", ErrUnavailable, resp.Error)
		}
		return fmt.Errorf("netns: job %s: %s", job, resp.Error)
	}
	if output != nil {
		if err := json.Unmarshal(resp.Output, output); err != nil {
			return fmt.Errorf("netns: run %s: decode output: %w", job, err)
		}
	}
	return nil
}

// hostNamespaces is the child's marker: network and user namespaces, uid and gid.
func hostNamespaces() (string, error) {
	n, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		return "", fmt.Errorf("read own network namespace: %w", err)
	}
	u, err := os.Readlink("/proc/thread-self/ns/user")
	if err != nil {
		return "", fmt.Errorf("read own user namespace: %w", err)
	}
	return fmt.Sprintf("%s %s %d %d", n, u, os.Getuid(), os.Getgid()), nil
}

// capped keeps the first max bytes and counts the rest.
type capped struct {
	bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p) // all consumed: the child never blocks
	room := c.max - c.Len()
	if room < len(p) {
		c.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	c.Buffer.Write(p)
	return n, nil
}

// note is the child's stderr as an error suffix.
func (c *capped) note() string {
	s := strings.TrimSpace(c.String())
	if s == "" {
		return ""
	}
	if c.dropped > 0 {
		s += fmt.Sprintf(" ... (%d more bytes)", c.dropped)
	}
	return "; child stderr: " + s
}

// launchEnv marks the launcher.
const launchEnv = "LABRUN_NETNS_LAUNCH"

// launch starts this binary again in new user and network namespaces, without launchEnv, and
// returns its exit code; it stays in Run's process group.
func launch(stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{os.Args[0]}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launchEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET)
	if os.Getenv(mountEnv) != "" {
		flags |= syscall.CLONE_NEWNS
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: flags,
		// Root inside is the caller outside; nothing else is mapped.
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		// Refused: no namespaces. Run reads the exit code.
		fmt.Fprintf(stderr, "labrun: netns launcher: start child: %v\n", err)
		return exitUnavailable
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "labrun: netns launcher: %v\n", err)
		return exitProtocol
	}
	return 0
}
