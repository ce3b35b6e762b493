// Package netns runs measurements in network namespaces labrun creates without root: a vanished
// peer's kernel timers are per namespace (docs/vanish.md), and a veth end set down drops packets
// as a powered-off host does.
//
// Run re-executes the binary in new user and network namespaces and exchanges JSON with the job
// on stdin and stdout. The binary dispatches the child first thing, as TestMain would:
//
//	if code, ok := netns.MaybeChild(vanish.Jobs(), os.Stdin, os.Stdout, os.Stderr); ok {
//		os.Exit(code)
//	}
//
// A job builds its hosts with NewPair; Vanish makes the peer vanish.
package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Job runs in the namespace child and returns a value for Run's caller; it must end with ctx.
type Job func(ctx context.Context, input json.RawMessage) (any, error)

// Jobs names a binary's jobs.
type Jobs map[string]Job

// Func adapts a typed function to a Job; unknown input fields are an error.
func Func[In, Out any](f func(ctx context.Context, in In) (Out, error)) Job {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in In
		if len(raw) > 0 && string(raw) != "null" {
			if err := decodeStrict(raw, &in); err != nil {
				return nil, fmt.Errorf("decode input: %w", err)
			}
		}
		return f(ctx, in)
	}
}

// ErrUnavailable: this system cannot create an unprivileged user and network namespace.
var ErrUnavailable = errors.New("network namespaces unavailable")

// MaxJobTime bounds a job whose ctx has no deadline.
const MaxJobTime = 2 * time.Minute

// childEnv marks a namespace child; its value names the parent's namespaces, uid and gid, which
// the child checks before changing anything.
const childEnv = "LABRUN_NETNS_CHILD"

const probeJob = "netns.probe"

type request struct {
	Job   string          `json:"job"`
	Input json.RawMessage `json:"input,omitempty"`
	// what remained of the parent's ctx
	Timeout time.Duration `json:"timeout"`
}

type response struct {
	Output json.RawMessage `json:"output,omitempty"`
	// errors do not cross processes
	Error string `json:"error,omitempty"`
}

func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

const markPrefix = "LABRUN_NETNS_"

// Environ is the environment without the child's marks, for programs a job starts.
func Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, markPrefix) {
			out = append(out, kv)
		}
	}
	return out
}
