package probe

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments/storm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
)

var updateStormRanking = flag.Bool("update-storm-ranking", false, "rewrite docs/clients.md's storm ranking from the model (TestStormRanking)")

// The storm ranking's block in docs/clients.md.
const (
	stormRankingStart = "<!-- storm ranking -->"
	stormRankingEnd   = "<!-- end of storm ranking -->"
)

// stormRankingBlock is the storm ranking's block of page, "" when it has none; -update-clients
// keeps it.
func stormRankingBlock(page string) string {
	_, rest, ok := strings.Cut(page, stormRankingStart+"\n")
	body, _, ok2 := strings.Cut(rest, stormRankingEnd+"\n")
	if !ok || !ok2 {
		return ""
	}
	return "\n" + stormRankingStart + "\n" + body + stormRankingEnd + "\n"
}

// stormRanking is the block: every storm policy (rules.StormPolicyNames) at exp-n's
// parameters, by the model, fewest requests per call during the pause first.
func stormRanking(t *testing.T) string {
	s := storm.New()
	type row struct {
		p    rules.RetryPolicy
		pred model.StormPrediction
		tip  float64
	}
	var rows []row
	for _, name := range rules.StormPolicyNames() {
		p, err := rules.StormPolicy(name, s.Retries, float64(s.Budget)/100, 1, s.Pause)
		if err != nil {
			t.Fatal(err)
		}
		m := model.Storm{Rate: float64(s.Rate), Capacity: s.Capacity, Service: s.Service, Timeout: s.Timeout,
			PauseAt: s.Before, Pause: s.Pause, Window: s.Before + s.Pause + s.After, Policy: p, Seed: uint64(s.Seed)}
		pred, err := m.Predict()
		if err != nil {
			t.Fatal(err)
		}
		tip, err := m.TipOver()
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{p, pred, tip})
	}
	amp := func(r row, ph int) float64 { return r.pred.Phases[ph].Amplification() }
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(amp(a, model.DuringPause), amp(b, model.DuringPause)), cmp.Compare(amp(a, model.AfterPause), amp(b, model.AfterPause)))
	})
	var b strings.Builder
	fmt.Fprintf(&b, `%s
## In a retry storm: requests per call, by the model

What each retry policy sends a downstream in trouble, at exp-n's parameters (`+"`labrun exp-n`"+`,
[experiments.md](experiments.md)): %d calls/s open loop on %d servers of %v in FIFO order, a %v
timeout per attempt, the downstream paused %v after %v, watched %v more. Requests received per
call made before, during and after the pause, fewest during the pause first; whether the calls
are answered at their first attempt again after the pause, and the load past which the policy
no longer recovers. `+"`labrun predict --storm --policy NAME`"+` gives each row; the `+"`storm`"+` rows of
the probes below (botocore, aws-sdk-go-v2, and the retry layers: go-retryablehttp, resty, got,
urllib3's `+"`Retry`"+`) measure the real libraries against the model with each one's own policy. Written by
`+"`go test ./probe -run TestStormRanking -update-storm-ranking`"+`.

| policy | before | during | after | recovers | tips over at |
|---|---|---|---|---|---|
`, stormRankingStart, s.Rate, s.Capacity, s.Service, s.Timeout, s.Pause, s.Before, s.After)
	for _, r := range rows {
		rec := "no"
		if r.pred.Recovered {
			rec = fmt.Sprintf("after %v", r.pred.RecoveredAfter.Round(10e6))
		}
		tip := "never, up to the capacity"
		if r.tip > 0 {
			tip = fmt.Sprintf("%.0f calls/s", r.tip)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %s | %s |\n", r.p.Name, amp(r, model.BeforePause), amp(r, model.DuringPause),
			amp(r, model.AfterPause), rec, tip)
	}
	b.WriteString(stormRankingEnd + "\n")
	return b.String()
}

// TestStormRanking holds docs/clients.md's storm ranking to the model; -update-storm-ranking
// writes it, after the ranking.
func TestStormRanking(t *testing.T) {
	path := filepath.Join("..", "docs", "clients.md")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page, want := string(old), stormRanking(t)
	got := strings.TrimPrefix(stormRankingBlock(page), "\n")
	if got == want {
		return
	}
	if !*updateStormRanking {
		t.Fatalf("docs/clients.md's storm ranking is stale: run go test ./probe -run TestStormRanking -update-storm-ranking\ngot:\n%s\nwant:\n%s", got, want)
	}
	if got != "" {
		page = strings.Replace(page, got, want, 1)
	} else {
		const after = rankingEnd + "\n"
		i := strings.Index(page, after)
		if i < 0 {
			t.Fatal("docs/clients.md has no ranking to put the storm ranking after")
		}
		page = page[:i+len(after)] + "\n" + want + page[i+len(after):]
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shippedOnly is the scenarios a shipped probe runs: its only, or every scenario but the
// storm, which the probes that list it or set storm run (their sections of docs/clients.md
// have its row).
func shippedOnly(sp shippedProbe) string {
	names := sp.only
	if len(names) == 0 {
		names = slices.DeleteFunc(ScenarioNames(), func(s string) bool { return s == stormScenario().Name && !sp.storm })
	}
	if *shippedScenarios != "" {
		asked := strings.Split(*shippedScenarios, ",")
		names = slices.DeleteFunc(slices.Clone(names), func(s string) bool { return !slices.Contains(asked, s) })
	}
	return strings.Join(names, ",")
}
