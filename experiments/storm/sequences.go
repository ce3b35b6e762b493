package storm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// The deterministic sequences: calls one at a time against a downstream that fails the
// calls a pattern names, so that a bound's count of tokens is exact.

// pattern is drain failing calls, then blocks of refill successes and one failing call.
func pattern(drain, blocks, refill int) []bool {
	fails := make([]bool, drain, drain+blocks*(refill+1))
	for i := range fails {
		fails[i] = true
	}
	for range blocks {
		fails = append(fails, make([]bool, refill)...)
		fails = append(fails, true)
	}
	return fails
}

// sequenceModel is the model of calls one at a time (far enough apart that none overlaps).
func sequenceModel(p rules.RetryPolicy, fails []bool) (model.StormPrediction, error) {
	return model.Storm{Rate: 2, Capacity: 1, Service: time.Millisecond, Timeout: time.Second,
		Window: time.Duration(len(fails)) * 500 * time.Millisecond, FailCalls: fails, Policy: p}.Predict()
}

// perCall counts the model's requests per call.
func perCall(p model.StormPrediction, n int) []int {
	got := make([]int, n)
	for _, a := range p.Attempts {
		if !a.Shed {
			got[a.Call]++
		}
	}
	return got
}

// sequenceRows judges a sequence's executions: the drain's, and the refill's with the call
// whose failure is retried again.
func sequenceRows(name string, drain int, fails []bool, want, got []int) []results.Row {
	sum := func(xs []int, from, to int) int {
		n := 0
		for _, x := range xs[from:to] {
			n += x
		}
		return n
	}
	resume := "none"
	for i := drain; i < len(fails); i++ {
		if fails[i] && want[i] > 1 {
			resume = fmt.Sprintf("call %d, after %d successes", i+1, countFalse(fails[drain:i]))
			break
		}
	}
	n := len(fails)
	return []results.Row{
		lab.Judged(fmt.Sprintf("%s: executions of %d failing calls in a row (%d retries before the bound stops them)", name, drain, sum(want, 0, drain)-drain),
			lab.Executions(results.Count(sum(want, 0, drain)), results.Count(sum(got, 0, drain))), lab.Saw("the downstream's executions")),
		lab.Judged(fmt.Sprintf("%s: executions while successes refill it; retries resume at %s", name, resume),
			lab.Executions(results.Count(sum(want, drain, n)), results.Count(sum(got, drain, n))), lab.Saw("the downstream's executions")),
	}
}

func countFalse(bs []bool) int {
	n := 0
	for _, b := range bs {
		if !b {
			n++
		}
	}
	return n
}

// The gRPC sequence's service config: grpc-go's retry policy and its throttling (gRFC A6).
const (
	grpcAttempts   = 3
	grpcMaxTokens  = 10
	grpcTokenRatio = 0.1
	grpcMethod     = "/storm.Down/Call"
)

func grpcServiceConfig() string {
	return fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"storm.Down"}],"retryPolicy":{"maxAttempts":%d,"initialBackoff":"0.001s","maxBackoff":"0.001s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":%d,"tokenRatio":%g}}`,
		grpcAttempts, grpcMaxTokens, grpcTokenRatio)
}

// rawCodec carries a message as its bytes, so that no generated code is needed.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// grpcSequence runs the calls through grpc-go's own retry and throttling against a gRPC
// downstream that answers UNAVAILABLE to the failing calls.
func grpcSequence(ctx context.Context, fails []bool) ([]int, error) {
	var mu sync.Mutex // guards got
	got := make([]int, len(fails))
	handler := func(_ any, st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		i := -1
		if v := md.Get("call"); len(v) == 1 {
			i, _ = strconv.Atoi(v[0])
		}
		if i < 0 || i >= len(fails) {
			return status.Error(codes.InvalidArgument, "no call number")
		}
		mu.Lock()
		got[i]++
		mu.Unlock()
		// The request is read first: an answer before it is whole resets a stream the
		// client still writes, which ends the call with EOF rather than the status.
		var in []byte
		if err := st.RecvMsg(&in); err != nil {
			return err
		}
		if fails[i] {
			return status.Error(codes.Unavailable, "failing")
		}
		return st.SendMsg(&in)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(handler))
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcServiceConfig()), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	for i := range fails {
		cctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "call", strconv.Itoa(i)), 5*time.Second)
		in, out := []byte("x"), []byte(nil)
		err := cc.Invoke(cctx, grpcMethod, &in, &out)
		cancel()
		if code := status.Code(err); code != codes.OK && code != codes.Unavailable {
			return nil, fmt.Errorf("grpc sequence, call %d: %w", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]int(nil), got...), ctx.Err()
}

// awsSequence runs the calls through aws-sdk-go-v2's standard retryer (awsGate) against an
// HTTP downstream that answers 503 to the failing calls.
func (s *Storm) awsSequence(ctx context.Context, p rules.RetryPolicy, fails []bool) ([]int, error) {
	return s.httpSequence(ctx, newAWSGate(p, uint64(s.Seed)), fails)
}

// httpSequence runs the calls one at a time through gt.
func (s *Storm) httpSequence(ctx context.Context, gt gate, fails []bool) ([]int, error) {
	d, err := newDownstream(1, time.Millisecond, func(i int) bool { return i >= 0 && i < len(fails) && fails[i] })
	if err != nil {
		return nil, err
	}
	defer d.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	one := *s
	one.Timeout = 5 * time.Second
	t0 := time.Now()
	for i := range fails {
		one.call(ctx, hc, d.URL, gt, i, t0, 0)
	}
	got := make([]int, len(fails))
	for _, e := range d.executions() {
		if e.call >= 0 && e.call < len(got) {
			got[e.call]++
		}
	}
	return got, ctx.Err()
}

// layered makes one call through three layers of 3 attempts on a failing downstream.
func (s *Storm) layered(ctx context.Context, p rules.RetryPolicy) (int, error) {
	d, err := newDownstream(1, time.Millisecond, func(int) bool { return true })
	if err != nil {
		return 0, err
	}
	defer d.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	one := *s
	one.Timeout = 5 * time.Second
	var layer func(depth int) outcome
	layer = func(depth int) outcome {
		o := failedAnswer
		for k := 0; k < p.Attempts && o != answered; k++ {
			if depth == max(p.Layers, 1) {
				o = one.attempt(ctx, hc, d.URL, 0, k)
			} else {
				o = layer(depth + 1)
			}
		}
		return o
	}
	layer(1)
	return len(d.executions()), ctx.Err()
}

// sequences runs the deterministic rows: grpc-go's throttling, the AWS quota, the layers.
func (s *Storm) sequences(ctx context.Context, opt lab.Options) ([]results.Row, error) {
	opt.Step(2*time.Second, "%s · grpc-go's retryThrottling, the AWS quota, three layers", s.Info().Name)
	var rows []results.Row
	gp := rules.GRPCThrottled(grpcAttempts, time.Millisecond, time.Millisecond, 1, grpcMaxTokens, grpcTokenRatio)
	gf := pattern(10, 8, 20)
	want, err := sequenceModel(gp, gf)
	if err != nil {
		return nil, err
	}
	got, err := grpcSequence(ctx, gf)
	if err != nil {
		return nil, err
	}
	rows = append(rows, sequenceRows(fmt.Sprintf("grpc-go retryThrottling (maxTokens %d, tokenRatio %g)", grpcMaxTokens, grpcTokenRatio), 10, gf, perCall(want, len(gf)), got)...)

	ap := rules.AWSStandard()
	ap.Backoff = rules.StormBackoff{} // the quota is the subject: no wait between attempts
	q := ap.Quota
	drain := q.Tokens/q.RetryCost/(ap.Attempts-1) + 2
	af := pattern(drain, 6, q.RetryCost/4)
	want, err = sequenceModel(ap, af)
	if err != nil {
		return nil, err
	}
	if got, err = s.awsSequence(ctx, ap, af); err != nil {
		return nil, err
	}
	rows = append(rows, sequenceRows(fmt.Sprintf("aws-sdk-go-v2 standard (quota %d, %d a retry, %d back a success)", q.Tokens, q.RetryCost, q.NoRetryIncrement), drain, af, perCall(want, len(af)), got)...)

	lp := rules.Layered(3, 3)
	lm, err := model.Storm{Rate: 1, Capacity: 1, Service: time.Millisecond, Timeout: time.Second, Window: time.Second, FailUntil: time.Hour, Policy: lp}.Predict()
	if err != nil {
		return nil, err
	}
	n, err := s.layered(ctx, lp)
	if err != nil {
		return nil, err
	}
	rows = append(rows, lab.Judged(fmt.Sprintf("%s on a failing downstream: executions for one call", lp.Name),
		lab.Executions(results.Count(lm.Phases[model.AfterPause].Requests), results.Count(n)), lab.Saw("the downstream's executions, every one answered 503")))
	return rows, nil
}
