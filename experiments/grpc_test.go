package experiments

import (
	"testing"
	"time"
)

// scaledGRPC is exp-m shortened: the same rows in about 4 s.
func scaledGRPC() *GRPC {
	g := NewGRPC()
	g.Deadline, g.Work, g.Cap, g.Timeouts = 100*ms, 250*ms, 200*ms, 5
	g.Chain, g.HopWork, g.LeafWork, g.HopOwn = 300*ms, 60*ms, 400*ms, 500*ms
	g.Every, g.StreamLimit, g.WaveCalls, g.WaveWork = 120*ms, 4, 12, 100*ms
	return g
}

func TestGRPCScaled(t *testing.T) {
	run := runScaled(t, scaledGRPC())
	if got, want := len(run.Rows), 22; got != want {
		t.Errorf("got %d rows, want %d", got, want)
	}
}

func TestGRPCCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(g *GRPC)
		want string
	}{
		{"work within the deadline", func(g *GRPC) { g.Work = g.Deadline }, "--work must exceed --deadline (300ms) by 50ms at least, got 300ms"},
		{"a message at the deadline", func(g *GRPC) { g.Every = 500 * time.Millisecond }, "--every 500ms puts a message 0s from --chain's deadline (1s): keep them 50ms apart"},
		{"a leaf within the chain", func(g *GRPC) { g.LeafWork = g.Chain }, "--leaf-work must outlast --chain (1s) by 50ms at least, got 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGRPC()
			tc.set(g)
			got := ""
			if err := Check(g, ""); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
