package experiments

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestPreFirst runs exp-k: every row passes, and the rules the rows rest on show in what was
// measured, apart from the model.
func TestPreFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("exp-k takes seconds")
	}
	k := NewPreFirst()
	run, err := k.Run(context.Background(), Options{Tolerance: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]results.Row{}
	for _, r := range run.Rows {
		byName[r.Name] = r
		t.Logf("%-85s %-15s %7v %7v conns %d/%d  %s", r.Name, r.Outcome, ptr(r.MeasuredMs), ptr(r.ExpectedMs), *r.NewConnections, *r.ExpectedNewConnections, r.Server)
		if !r.Pass {
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
	}
	if got, want := len(run.Rows), len(k.kRows())*len(k.Profiles()); got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	for _, w := range []struct {
		row     string
		outcome vocab.Outcome
		conns   int
	}{
		{"hc5: stalled handshake, connect and read timeouts only", vocab.Hang, 1},
		{"okhttp: stalled handshake, connect and read timeouts only", vocab.ReadTimeout, 1},
		{"go: stalled handshake, connect and read timeouts only", vocab.Hang, 1},
		{"okhttp: stalled handshake on both of two addresses, handshake limit 150ms", vocab.ReadTimeout, 2},
		{"hc5: first address a wrong-host certificate, second good", vocab.OK, 2},
		{"okhttp: first address a wrong-host certificate, second good", vocab.TLSError, 1},
		{"go: first address a wrong-host certificate, second good", vocab.TLSError, 1},
		{"hc5: lookup answered after 250ms", vocab.OK, 1},
		{"go: lookup answered after 250ms", vocab.ConnectTimeout, 0},
		{"okhttp: NXDOMAIN", vocab.DNSError, 0},
		{"okhttp: handshake answered one byte every 20ms, 15 bytes, connect and read timeouts only", vocab.OK, 1},
		{"go: handshake answered one byte every 20ms, 15 bytes, handshake limit 150ms", vocab.ConnectTimeout, 1},
		{"jdk: handshake answered one byte every 20ms, 15 bytes, connect and read timeouts only", vocab.ConnectTimeout, 1},
		{"jdk: stalled handshake on both of two addresses, handshake limit 150ms", vocab.ConnectTimeout, 1},
		{"jdk: lookup answered after 250ms", vocab.ConnectTimeout, 0},
		{"urlconnection: stalled handshake, connect and read timeouts only", vocab.ReadTimeout, 1},
		{"hc4: stalled handshake, connect and read timeouts only", vocab.ConnectTimeout, 1},
		{"hc4: stalled handshake on both of two addresses, handshake limit 150ms", vocab.ConnectTimeout, 2},
		{"hc4: TLS 1.0 only, on both of two addresses", vocab.TLSError, 1},
	} {
		r, ok := byName[w.row]
		if !ok {
			t.Errorf("no row %q", w.row)
			continue
		}
		if r.Outcome != w.outcome || *r.NewConnections != w.conns {
			t.Errorf("%s: got %s, %d connections; want %s, %d", w.row, r.Outcome, *r.NewConnections, w.outcome, w.conns)
		}
		if w.outcome == vocab.Hang && !strings.Contains(r.Server, "cap") {
			t.Errorf("%s: a capped row must say so, got %q", w.row, r.Server)
		}
	}
}

func ptr(f *float64) any {
	if f == nil {
		return "-"
	}
	return *f
}

// TestPreFirstProfilesHaveRules: every profile exp-k runs has its rules before the first byte
// in the model's table, so that a new profile is refused here until its rules are read.
func TestPreFirstProfilesHaveRules(t *testing.T) {
	for _, name := range NewPreFirst().Profiles() {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		if r := model.PreFirstRuleOf(model.Limits{Rules: p.Rules(lab.Spec{})}); r.HandshakeSource == "" || r.RetrySource == "" {
			t.Errorf("%s: no rules before the first byte", name)
		}
	}
}

// TestPreFirstCheck: the slow handshake needs its trickle, shorter than the cap.
func TestPreFirstCheck(t *testing.T) {
	for _, tc := range []struct {
		set  func(k *PreFirst)
		want string
	}{
		{func(k *PreFirst) { k.HandshakeBytes = 0 }, "--handshake-bytes must be set"},
		{func(k *PreFirst) { k.HandshakeGap = 0 }, "--handshake-gap must be set"},
		{func(k *PreFirst) { k.HandshakeBytes = 100 }, "longer than the slow handshake"},
	} {
		k := NewPreFirst()
		tc.set(k)
		if err := k.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if err := NewPreFirst().Check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}
