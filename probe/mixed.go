package probe

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/netns"
)

// The tls-mixed scenario: a host name with two addresses, the first with a certificate for
// another host name and the second with a good one, which tells a client that tries the next
// address after a bad certificate (HttpClient 5) from one that does not. Only the system's
// resolver gives a command two addresses for a name, so it runs in namespaces of the
// command's own, as the lookups do (lookup.go).

// mixedJob is the namespace job of tls-mixed; mixedBad and mixedGood the host's addresses.
const (
	mixedJob  = "probe.mixed"
	mixedBad  = "127.0.0.2"
	mixedGood = "127.0.0.3"
)

// mixedInput is what the namespace job is asked: the command and the call.
type mixedInput struct {
	Args, Env []string
	Call      Call
	Cap       time.Duration
	Path      string
}

// mixedSeen is what the job saw: the command's run, the connections both listeners accepted
// and the requests the good one answered.
type mixedSeen struct {
	Exec            Exec
	Conns, Requests int
}

// observeMixed runs cmd in namespaces of its own against the two addresses. Where the kernel
// refuses the namespaces, the scenario is skipped with the reason.
func observeMixed(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	obs := observation{sc: sc}
	skip := func(err error) (observation, error) {
		obs.skipped = "no namespaces of its own for the command's resolver here: " + err.Error()
		return obs, nil
	}
	if err := netns.Available(); err != nil {
		return skip(err)
	}
	in := mixedInput{Args: cmd.Args, Env: cmd.Env, Cap: sc.Cap, Path: sc.path,
		Call: Call{Method: sc.Method, Calls: sc.Calls, Concurrency: sc.Concurrency}}
	jctx, cancel := context.WithTimeout(ctx, sc.Cap+stallMargin+lookupSetup)
	defer cancel()
	var seen mixedSeen
	if err := netns.RunMounted(jctx, mixedJob, in, &seen); err != nil {
		switch {
		case ctx.Err() != nil:
			return obs, ctx.Err()
		case errors.Is(err, netns.ErrUnavailable):
			return skip(err)
		}
		return obs, err
	}
	obs.exec, obs.pre = seen.Exec, preFirstSeen{conns: seen.Conns, requests: seen.Requests}
	return obs, nil
}

// runMixed is the namespace job: the two listeners on one port, the name resolving to both,
// the lab's CA in a file of the job's, the command's run.
func runMixed(ctx context.Context, in mixedInput) (mixedSeen, error) {
	var seen mixedSeen
	if err := netns.LoopbackUp(); err != nil {
		return seen, err
	}
	faults, err := fakesrv.NewTLSFaults(lookupHost)
	if err != nil {
		return seen, err
	}
	bad, err := faults.Listen(fakesrv.TLSWrongHost, mixedBad, 0)
	if err != nil {
		return seen, err
	}
	defer bad.Close()
	_, portText, _ := net.SplitHostPort(bad.Addr)
	port, _ := strconv.Atoi(portText)
	good, err := faults.Listen(fakesrv.TLSGood, mixedGood, port)
	if err != nil {
		return seen, err
	}
	defer good.Close()
	_, dir, stop, err := systemResolver(map[string][]string{lookupHost: {mixedBad, mixedGood}})
	if err != nil {
		return seen, err
	}
	defer stop()
	in.Call.CA = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(in.Call.CA, faults.CAPEM(), 0o600); err != nil {
		return seen, err
	}
	in.Call.URL = "https://" + net.JoinHostPort(lookupHost, portText) + in.Path
	if seen.Exec, err = (Command{Args: in.Args, Env: in.Env}).run(ctx, in.Call, in.Cap); err != nil {
		return seen, err
	}
	seen.Conns, seen.Requests = bad.Accepted()+good.Accepted(), good.Requests()
	return seen, nil
}
