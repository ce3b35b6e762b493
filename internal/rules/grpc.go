package rules

import (
	"slices"
	"time"
)

// GRPC is a gRPC library's own rules where gRPC's libraries differ: what labrun probe --grpc
// --expect NAME judges its rows by. The zero value is grpc-go's.
type GRPC struct {
	Name, Client string
	// Digits: grpc-timeout rounded up to that many significant digits (0: exact).
	Digits int
	// RefusedIsAttempt: a refused stream fails its attempt (UNAVAILABLE), not re-sent.
	RefusedIsAttempt bool
	// Timeout and Refused cite the two rules' source.
	Timeout, Refused string
}

var grpcRegistry []GRPC

// RegisterGRPC adds a gRPC library's rules; its file calls it once, from init.
func RegisterGRPC(gs ...GRPC) { grpcRegistry = append(grpcRegistry, gs...) }

// LookupGRPC returns the gRPC rules called name; "" is grpc-go's.
func LookupGRPC(name string) (GRPC, bool) {
	if name == "" {
		name = "grpc-go"
	}
	i := slices.IndexFunc(grpcRegistry, func(g GRPC) bool { return g.Name == name })
	if i < 0 {
		return GRPC{}, false
	}
	return grpcRegistry[i], true
}

// GRPCNames lists the gRPC rules' names.
func GRPCNames() []string {
	var out []string
	for _, g := range grpcRegistry {
		out = append(out, g.Name)
	}
	return out
}

// Sent is the budget the server is told for b: b, or its whole ms rounded up to Digits.
func (g GRPC) Sent(b time.Duration) time.Duration {
	if g.Digits <= 0 || b <= 0 {
		return b
	}
	ms := int64((b + time.Millisecond - 1) / time.Millisecond)
	unit := int64(1)
	for limit := pow10(g.Digits); ms > limit*unit-1; unit *= 10 {
	}
	return time.Duration((ms+unit-1)/unit*unit) * time.Millisecond
}

// SentMax is Sent of b a millisecond later: the deadline rounded up, the clock down.
func (g GRPC) SentMax(b time.Duration) time.Duration {
	if g.Digits <= 0 || b <= 0 {
		return b
	}
	return g.Sent(b.Truncate(time.Millisecond) + time.Millisecond)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func init() {
	RegisterGRPC(
		GRPC{Name: "grpc-go", Client: "grpc-go v1.85.0",
			Timeout: "grpc-go internal/grpcutil/encode_duration.go EncodeDuration: the budget in the finest unit " +
				"whose value fits 8 digits, rounded up",
			Refused: "grpc-go stream.go shouldRetry: a stream the server never processed (REFUSED_STREAM) is sent " +
				"again once, transparently, outside the retry policy (gRFC A6)"},
		GRPC{Name: "grpcio", Client: "grpcio 1.51.1 (Debian python3-grpcio, gRPC C-core)", Digits: 3, RefusedIsAttempt: true,
			Timeout: "gRPC C-core src/core/lib/transport/timeout_encoding.cc Timeout::FromMillis: whole milliseconds " +
				"under 1 s, then DivideRoundingUp to tens of ms under 10 s and hundreds under 100 s (3 significant " +
				"digits); the budget is the deadline rounded up to the millisecond (Timestamp::FromTimespecRoundUp, " +
				"src/core/lib/gprpp/time.cc) less the clock's millisecond, so a warm channel writes 1010m for 1 s " +
				"and 301m for 0.3 s, and a first call whose connect took a few ms of it 1500m for 1.5 s",
			Refused: "gRPC C-core closes a stream refused with RST_STREAM(REFUSED_STREAM) as any reset stream " +
				"(src/core/ext/transport/chttp2/transport/frame_rst_stream.cc, UNAVAILABLE) without marking it unseen " +
				"by the server, so the retry filter's transparent retry, which needs that mark " +
				"(src/core/ext/filters/client_channel/retry_filter.cc RecvTrailingMetadataReady: kNotSeenByServer), " +
				"does not send it again: without a retry policy the call fails; with one it is an attempt of the policy"},
	)
}
