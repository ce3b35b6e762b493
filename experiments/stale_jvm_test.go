package experiments

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// TestStaleCheckMatchesHC5 holds the hc5 profile's stale check to Debian's HttpClient 5.2.1,
// the release it follows: a pooled connection the server closed while it sat idle (timeout
// 300 ms, idle 600 ms) is found and replaced with validateAfterInactivity 10 ms, and used as it
// is with validateAfterInactivity 0, which 5.2.1 takes for "off" (5.2.2 for "every lease").
// Automatic retries are off, so the stale connection fails the call. For each setting the real
// library's outcome, executions and new connections must be the model's with the rules' reading
// of the setting (rules.Reuse.Validate).
func TestStaleCheckMatchesHC5(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	rt := jvm.Require(t, jvm.HttpClient5)
	const serverIdle, idle = 300 * time.Millisecond, 600 * time.Millisecond
	settings := []time.Duration{0, 10 * time.Millisecond}
	args := []string{strconv.Itoa(int(idle.Milliseconds()))}
	var srvs []*fakesrv.Server
	for _, v := range settings {
		srv := testServer(t, fakesrv.WithIdleTimeout(serverIdle))
		srvs = append(srvs, srv)
		args = append(args, strconv.Itoa(int(v.Milliseconds())), srv.URL+"/delay")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := rt.Run(ctx, jvm.Program{Source: "testdata/StaleHC5.java", Libs: []jvm.Library{jvm.HttpClient5}}, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(settings) {
		t.Fatalf("got %d result lines, want %d: %s", len(lines), len(settings), out)
	}
	for i, v := range settings {
		hc5, _ := LookupProfile(ProfileHC5)
		r := hc5.Rules(lab.Spec{})
		b, err := lab.Build(ProfileHC5, lab.Spec{ValidateAfterInactivity: r.Reuse.Validate(v)})
		if err != nil {
			t.Fatal(err)
		}
		b.C.Close()
		pred := model.Predict(model.Downstream{IdleFor: idle, ServerIdleTimeout: serverIdle}, b.Limits, false, 0)
		log := lab.Settled(ctx, srvs[i], 1)
		t.Logf("validateAfterInactivity %v: HttpClient 5.2.1: %s; the model: %s", v, lines[i], pred.Outcome)
		gotOK, wantOK := strings.HasPrefix(lines[i], "ok "), pred.Outcome == vocab.OK
		execs, conns := len(log)-1, srvs[i].ConnsAccepted()-1
		if gotOK != wantOK || execs != pred.Executions || conns != pred.Connects {
			t.Errorf("validateAfterInactivity %v: HttpClient 5.2.1: %s, %d executions, %d new connections; the model: %s, %d, %d",
				v, lines[i], execs, conns, pred.Outcome, pred.Executions, pred.Connects)
		}
	}
}
