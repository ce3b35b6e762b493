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
		{"stalled handshake, connect and read timeouts only: hc5", vocab.Hang, 1},
		{"stalled handshake, connect and read timeouts only: okhttp", vocab.ReadTimeout, 1},
		{"stalled handshake, connect and read timeouts only: go", vocab.Hang, 1},
		{"stalled handshake on both of two addresses, handshake limit 150ms: okhttp", vocab.ReadTimeout, 2},
		{"first address a wrong-host certificate, second good: hc5", vocab.OK, 2},
		{"first address a wrong-host certificate, second good: okhttp", vocab.TLSError, 1},
		{"first address a wrong-host certificate, second good: go", vocab.TLSError, 1},
		{"lookup answered after 250ms: hc5", vocab.OK, 1},
		{"lookup answered after 250ms: go", vocab.ConnectTimeout, 0},
		{"NXDOMAIN: okhttp", vocab.DNSError, 0},
		{"handshake answered one byte every 20ms, 15 bytes, connect and read timeouts only: okhttp", vocab.OK, 1},
		{"handshake answered one byte every 20ms, 15 bytes, handshake limit 150ms: go", vocab.ConnectTimeout, 1},
		{"handshake answered one byte every 20ms, 15 bytes, connect and read timeouts only: jdk", vocab.ConnectTimeout, 1},
		{"stalled handshake on both of two addresses, handshake limit 150ms: jdk", vocab.ConnectTimeout, 1},
		{"lookup answered after 250ms: jdk", vocab.ConnectTimeout, 0},
		{"stalled handshake, connect and read timeouts only: urlconnection", vocab.ReadTimeout, 1},
		{"stalled handshake, connect and read timeouts only: hc4", vocab.ConnectTimeout, 1},
		{"stalled handshake on both of two addresses, handshake limit 150ms: hc4", vocab.ConnectTimeout, 2},
		{"TLS 1.0 only, on both of two addresses: hc4", vocab.TLSError, 1},
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
