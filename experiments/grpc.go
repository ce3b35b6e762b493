package experiments

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// GRPC is experiment M: gRPC's deadline, measured with grpc-go 1.85.0 as client and server
// (grpcsrv). One deadline governs a call; it goes on the wire as grpc-timeout; the server's
// context ends with it but a handler that ignores its context is charged anyway; a timed-out
// call resets its stream and keeps the connection; a chain passes the budget down or does not;
// a server stream has no timer per message; a retry policy executes every attempt; a refused
// stream is retried transparently; a stream limit makes waves. Its rows are the cases of
// grpcCases, each measured by one function and predicted by the model's gRPC rules
// (internal/model/grpc.go).
type GRPC struct {
	Deadline    time.Duration
	Work        time.Duration
	Cap         time.Duration
	Timeouts    int
	Chain       time.Duration
	HopWork     time.Duration
	HopOwn      time.Duration
	LeafWork    time.Duration
	Every       time.Duration
	StreamLimit int
	WaveCalls   int
	WaveWork    time.Duration
	Keepalive   bool
}

// NewGRPC returns experiment M with its documented parameters.
func NewGRPC() *GRPC {
	return &GRPC{Deadline: 300 * time.Millisecond, Work: time.Second, Cap: 2 * time.Second, Timeouts: 20,
		Chain: time.Second, HopWork: 100 * time.Millisecond, HopOwn: 2 * time.Second, LeafWork: 1500 * time.Millisecond,
		Every: 400 * time.Millisecond, StreamLimit: 10, WaveCalls: 50, WaveWork: 200 * time.Millisecond}
}

// Info implements Experiment.
func (*GRPC) Info() Info {
	return Info{
		Name:  "exp-m",
		Topic: "grpc",
		Title: "gRPC deadlines",
		Description: "grpc-go 1.85.0 against labrun's gRPC fault server. No deadline hangs to the cap " +
			"and sends no grpc-timeout; a deadline goes on the wire and ends the server's context " +
			"(Canceled or DeadlineExceeded: the two race), yet a handler that ignores its context " +
			"finishes its work, charged; timed-out calls reset their stream and keep the connection " +
			"where net/http's HTTP/1.1 closes one per timeout; a chain that passes its context on " +
			"gives the next hop what is left, one with its own 2 s works on after the caller gave " +
			"up; a server stream's deadline covers the whole call; a retry policy executes every " +
			"attempt, capped at 5; a refused stream is retried once transparently, even with retries " +
			"disabled; a stream limit makes waves. --keepalive adds the keepalive floor's row, which " +
			"takes 10 s: grpc-go raises any keepalive Time below 10 s to 10 s. It runs grpc-go and " +
			"net/http by design and takes no --client.",
		Examples: []string{"labrun exp-m", "labrun exp-m --deadline 500ms --work 2s", "labrun exp-m --keepalive   # 10 s more: the keepalive floor"},
	}
}

// Profiles implements FixedProfiles: grpc-go, and net/http for the HTTP/1.1 row.
func (*GRPC) Profiles() []string { return []string{ProfileGo} }

// Params implements Experiment.
func (g *GRPC) Params() []Param {
	return []Param{
		{Name: "deadline", Usage: "the call's deadline", Duration: &g.Deadline},
		{Name: "work", Usage: "the handler's work, longer than --deadline", Duration: &g.Work},
		{Name: "cap", Usage: "how long the call without a deadline is watched", Duration: &g.Cap, MaxDuration: time.Minute},
		{Name: "timeouts", Usage: "timed-out calls on one connection, and over HTTP/1.1", Int: &g.Timeouts, Min: 1, Max: 200},
		{Name: "chain", Usage: "the chain's deadline at its first hop", Duration: &g.Chain},
		{Name: "hop-work", Usage: "the middle hop's work before it calls on", Duration: &g.HopWork},
		{Name: "hop-own", Usage: "the middle hop's own deadline, instead of passing the context on", Duration: &g.HopOwn},
		{Name: "leaf-work", Usage: "the last hop's work", Duration: &g.LeafWork},
		{Name: "every", Usage: "the server stream's pause before each message", Duration: &g.Every},
		{Name: "stream-limit", Usage: "the server's MaxConcurrentStreams", Int: &g.StreamLimit, Min: 1, Max: 100},
		{Name: "wave-calls", Usage: "calls started at once against the stream limit", Int: &g.WaveCalls, Min: 1, Max: 500},
		{Name: "wave-work", Usage: "each of those calls' work", Duration: &g.WaveWork},
		{Name: "keepalive", Usage: "add the keepalive floor's row (slow: 10 s, grpc-go's floor on keepalive Time)", Bool: &g.Keepalive},
	}
}

// minGap is the least time between two events whose order a row relies on: far above a
// loaded machine's scheduling noise, so that no count can flip.
const minGap = 50 * time.Millisecond

// Check implements Checker: every row compares two times, which must be far enough apart.
func (g *GRPC) Check() error {
	switch {
	case g.Deadline < minGap:
		return fmt.Errorf("--deadline must be at least %v, got %v", minGap, g.Deadline)
	case g.Work < g.Deadline+minGap:
		return fmt.Errorf("--work must exceed --deadline (%v) by %v at least, got %v", g.Deadline, minGap, g.Work)
	case g.Cap < minGap:
		return fmt.Errorf("--cap must be at least %v, got %v", minGap, g.Cap)
	case g.HopWork+minGap > g.Chain:
		return fmt.Errorf("--hop-work must leave %v of --chain (%v), got %v", minGap, g.Chain, g.HopWork)
	case g.LeafWork < g.Chain+minGap:
		return fmt.Errorf("--leaf-work must outlast --chain (%v) by %v at least, got %v", g.Chain, minGap, g.LeafWork)
	case g.HopOwn < g.LeafWork+minGap:
		return fmt.Errorf("--hop-own must outlast --leaf-work (%v) by %v at least, got %v", g.LeafWork, minGap, g.HopOwn)
	case g.Every < minGap:
		return fmt.Errorf("--every must be at least %v, got %v", minGap, g.Every)
	case g.WaveWork < minGap:
		return fmt.Errorf("--wave-work must be at least %v, got %v", minGap, g.WaveWork)
	}
	// A message due within minGap of the deadline could land on either side of it.
	for at := g.Every; at < g.Chain+minGap; at += g.Every {
		if d := at - g.Chain; d > -minGap && d < minGap {
			return fmt.Errorf("--every %v puts a message %v from --chain's deadline (%v): keep them %v apart", g.Every, d.Abs(), g.Chain, minGap)
		}
	}
	return nil
}

// grpcCase is one case of the experiment: a name for progress and what measures it, which
// appends the case's rows to the run. Every row is built from judges (lab.Judged): the
// gRPC ones (lab.GRPCCalled, lab.EventAt, lab.Charged) where a call has no client.Result.
type grpcCase struct {
	step string
	run  func(g *GRPC, ctx context.Context, srv *grpcsrv.Server, opt Options, run *results.Run) error
	// slow cases run only when their flag is set.
	slow bool
}

// grpcCases are the experiment's cases, in row order.
func grpcCases() []grpcCase {
	return []grpcCase{
		{step: "no deadline", run: (*GRPC).noDeadline},
		{step: "a deadline, a handler that ignores its context", run: (*GRPC).deadline},
		{step: "timeouts on one connection", run: (*GRPC).kept},
		{step: "a chain", run: (*GRPC).chain},
		{step: "a server stream", run: (*GRPC).stream},
		{step: "a retry policy", run: (*GRPC).retries},
		{step: "refused streams", run: (*GRPC).transparent},
		{step: "a stream limit", run: (*GRPC).waves},
		{step: "keepalive against a frozen server", run: (*GRPC).keepalive, slow: true},
	}
}

// Run implements Experiment.
func (g *GRPC) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(g, opt, func(run *results.Run) error {
		srv, err := grpcsrv.New(grpcsrv.WithMaxConcurrentStreams(uint32(g.StreamLimit)), grpcsrv.WithMaxDuration(param.MaxDuration))
		if err != nil {
			return fmt.Errorf("start gRPC fake server: %w", err)
		}
		defer srv.Close()
		for _, c := range grpcCases() {
			if c.slow && !g.Keepalive {
				continue
			}
			opt.progress(0, "%s · %s", g.Info().Name, c.step)
			srv.Reset()
			if err := c.run(g, ctx, srv, opt, run); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
}

// dial returns a grpc-go client of srv whose connection is up: a first call went through, so
// that a measured call spends nothing on connecting, as the model assumes.
func dial(ctx context.Context, srv *grpcsrv.Server, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(grpcsrv.Codec{}))}, opts...)
	cc, err := grpc.NewClient("passthrough:///"+srv.Addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("gRPC client: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := invoke(wctx, cc, "warm", ""); err != nil {
		cc.Close()
		return nil, fmt.Errorf("gRPC client: the warm-up call failed: %w", err)
	}
	return cc, nil
}

// invoke makes one unary call with the fault, named id.
func invoke(ctx context.Context, cc *grpc.ClientConn, id, fault string) error {
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(grpcsrv.FaultHeader, fault, grpcsrv.CallHeader, id))
	var resp []byte
	return cc.Invoke(ctx, grpcsrv.MethodCall, []byte{}, &resp)
}

// callOf returns the server's record of the stream of call id (the first one), waiting until
// done says it is complete, for at most wait.
func callOf(ctx context.Context, srv *grpcsrv.Server, id string, wait time.Duration, done func(grpcsrv.Call) bool) (grpcsrv.Call, bool) {
	end := time.Now().Add(wait)
	for {
		for _, c := range srv.Stats().Calls {
			if c.ID == id && done(c) {
				return c, true
			}
		}
		if time.Now().After(end) || ctx.Err() != nil {
			for _, c := range srv.Stats().Calls {
				if c.ID == id {
					return c, false
				}
			}
			return grpcsrv.Call{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// keepalive is the keepalive floor: a client with keepalive Time 200 ms and Timeout 100 ms,
// on a connection that freezes once the call is sent, notices at the floor, 10 s, plus 100 ms.
func (g *GRPC) keepalive(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	const t, to = 200 * time.Millisecond, 100 * time.Millisecond
	// No warm-up: keepalive counts from the last frame read, which is the connection's setup
	// just before the call.
	cc, err := grpc.NewClient("passthrough:///"+srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(grpcsrv.Codec{})),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: t, Timeout: to}))
	if err != nil {
		return fmt.Errorf("gRPC client: %w", err)
	}
	defer cc.Close()
	want := model.GRPCKeepaliveNotice(t, to)
	cctx, cancel := context.WithTimeout(ctx, want+5*time.Second) // a cap, far beyond the floor
	defer cancel()
	start := time.Now()
	err = invoke(cctx, cc, "frozen", "freeze")
	took := time.Since(start)
	// UNAVAILABLE, the connection closed, is an error.
	run.Rows = append(run.Rows, lab.Judged(fmt.Sprintf("keepalive Time %v, Timeout %v, the connection frozen: noticed at grpc-go's floor of %v", t, to, model.GRPCKeepaliveFloor),
		lab.Documented("noticed at 10.1 s", nil, nil), lab.GRPCCalled(want, vocab.Failed, took, err),
		lab.Saw(fmt.Sprintf("froze the connection; the call ended %s", status.Code(err)))))
	return nil
}
