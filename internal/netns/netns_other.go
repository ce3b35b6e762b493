//go:build !linux

package netns

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/labrun/labrun/internal/reap"
)

// MaxSynCount is the largest TCP_SYNCNT Linux accepts.
const MaxSynCount = 127

// Available fails: namespaces need Linux.
func Available() error { return fmt.Errorf("netns: %w: needs Linux", ErrUnavailable) }

// Run fails: namespaces need Linux.
func Run(ctx context.Context, job string, input, output any) error {
	return fmt.Errorf("netns: run %s: %w: needs Linux", job, ErrUnavailable)
}

// MaybeChild reports child = false; a marked child refuses to go on.
func MaybeChild(jobs Jobs, stdin io.Reader, stdout, stderr io.Writer) (code int, child bool) {
	if code, helper := reap.MaybeHelper(); helper {
		return code, true
	}
	if os.Getenv(childEnv) == "" {
		return 0, false
	}
	fmt.Fprintln(stderr, "labrun: netns child: needs Linux")
	return 3, true
}

// SynCount's function fails: TCP_SYNCNT is Linux's.
func SynCount(n int) func(network, address string, c syscall.RawConn) error {
	if n < 1 || n > MaxSynCount {
		panic(fmt.Sprintf("netns: SynCount needs 1..%d, got %d", MaxSynCount, n))
	}
	return func(network, address string, c syscall.RawConn) error {
		return fmt.Errorf("netns: TCP_SYNCNT on %s: needs Linux", address)
	}
}

// RunMounted fails: namespaces need Linux.
func RunMounted(ctx context.Context, job string, input, output any) error {
	return fmt.Errorf("netns: run %s: %w: needs Linux", job, ErrUnavailable)
}

// BindFile fails: namespaces need Linux.
func BindFile(dir, target string, content []byte) error {
	return fmt.Errorf("netns: bind %s: %w: needs Linux", target, ErrUnavailable)
}

// LoopbackUp fails: namespaces need Linux.
func LoopbackUp() error { return fmt.Errorf("netns: loopback up: %w: needs Linux", ErrUnavailable) }
