// Package netns runs measurements inside network namespaces that labrun creates for itself,
// without root and without touching the host: the kernel timers of a peer that vanishes
// (docs/vanish.md) are per network namespace, and a veth pair whose far end is set down
// drops packets exactly as a powered-off host does.
//
// # How a job runs
//
// Run re-executes the running binary (/proc/self/exe) as a child in a new user namespace and a
// new network namespace (CLONE_NEWUSER|CLONE_NEWNET, uid and gid 0 inside mapped to the
// caller's own), passes the job's name and JSON input on the child's stdin and reads its JSON
// output from the child's stdout. The child is root only inside namespaces it owns: the kernel
// lets it change the sysctls of its own network namespace (net.ipv4.tcp_retries2 and friends)
// and create interfaces there, and nothing of the host's.
//
// The binary must therefore dispatch the child mode first thing, before parsing flags, with an
// explicit table of the jobs it can run:
//
//	func main() {
//		if code, ok := netns.MaybeChild(vanish.Jobs(), os.Stdin, os.Stdout, os.Stderr); ok {
//			os.Exit(code)
//		}
//		...
//	}
//
// and a test binary whose tests call Run does the same in TestMain, before m.Run. A binary that
// does not would run its normal main in the child; Run refuses to start a child from inside a
// child, so that mistake ends in an error, not in a cascade of processes.
//
// # Inside the child
//
// A job is a plain function (Func adapts a typed one). It builds its network with NewPair: the
// child's own namespace plays the client host, a second namespace made by the pair plays the
// server host, and a veth pair joins them. ListenServer opens a listener in the server
// namespace, Vanish sets the server end of the veth down (the peer vanishes: no FIN, no RST,
// every packet dropped), SetSysctl sets a sysctl of the client namespace.
//
// Outside any namespace, SynCount sets a socket's own SYN retry count (TCP_SYNCNT, no
// privileges needed) through net.Dialer.Control.
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

// Job is work run inside the namespace child: it decodes its input and returns a value that
// is encoded as JSON for the caller of Run. It must end when ctx is done.
type Job func(ctx context.Context, input json.RawMessage) (any, error)

// Jobs names the jobs a binary can run in its namespace child. It is passed to MaybeChild
// explicitly; there is no registration.
type Jobs map[string]Job

// Func adapts a typed function to a Job: the input is decoded into In (unknown fields are an
// error), and the Out returned is the job's output.
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

// ErrUnavailable is matched (errors.Is) by Available's and Run's errors when this system
// cannot create an unprivileged user and network namespace.
var ErrUnavailable = errors.New("network namespaces unavailable")

// MaxJobTime bounds a job whose ctx has no deadline: the child gives up on its own after it,
// even if its parent could not kill it.
const MaxJobTime = 2 * time.Minute

// childEnv marks a namespace child. Its value is the parent's network and user namespaces
// and its uid and gid ("net:[4026531840] user:[4026531837] 1000 1000"): the child checks that
// it is in neither namespace and that its user namespace maps root to that uid and gid alone
// before it changes anything.
const childEnv = "LABRUN_NETNS_CHILD"

// probeJob is the job that Available runs; every child knows it.
const probeJob = "netns.probe"

// request is what the parent writes to the child's stdin.
type request struct {
	Job   string          `json:"job"`
	Input json.RawMessage `json:"input,omitempty"`
	// Timeout is how long the child lets the job run: what remained of the parent's ctx.
	Timeout time.Duration `json:"timeout"`
}

// response is what the child writes to its stdout.
type response struct {
	Output json.RawMessage `json:"output,omitempty"`
	// Error is the job's error, flattened to its text: errors do not cross processes.
	Error string `json:"error,omitempty"`
}

// decodeStrict decodes JSON into v, refusing fields that v does not have.
func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// markPrefix starts the names of the variables that mark a namespace child and its launcher.
const markPrefix = "LABRUN_NETNS_"

// Environ is the process's environment without the marks of a namespace child: the
// environment for a program a job starts, which is not a child itself (it would otherwise
// take itself for one, if it is this binary).
func Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, markPrefix) {
			out = append(out, kv)
		}
	}
	return out
}
