package predict

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// followUpClients are the presets whose follow-up rules the model knows, with the source it
// follows for each.
var followUpClients = map[string]string{
	"okhttp":     "OkHttp 3.13.1's RetryAndFollowUpInterceptor.followUpRequest decides what follows each response, at most 20 follow-ups",
	"okhttp@3.2": "OkHttp 3.13.1's RetryAndFollowUpInterceptor.followUpRequest decides what follows each response, at most 20 follow-ups",
	"go":         "net/http's Client.Do follows redirects by redirectBehavior (client.go), at most 10, and repeats no other status",
	"hc5":        "HttpClient 5.2.1's RedirectExec follows 301, 302, 303, 307 and 308 with a Location (DefaultRedirectStrategy), at most 50, none circular",
}

// checkFollowUp reports a follow-up question that makes no sense, naming the flags.
func (p *Predictor) checkFollowUp() error {
	if _, ok := followUpClients[p.Defaults]; !ok {
		return fmt.Errorf("--status needs --defaults okhttp, go or hc5: the follow-up rules labrun has read")
	}
	switch {
	case p.Status < 101:
		return fmt.Errorf("--status-times, --retry-after, --no-redirects and --authenticate need --status (101 to 599)")
	case p.Stall || p.HostDown || p.Dropped || p.KillAfterRead != "" || p.Bytes > 0 || p.Queue > 0:
		return fmt.Errorf("--status excludes --stall, --host-down, --dropped, --kill-after-read, --bytes and --queue: it asks what follows an answer")
	case p.Authenticate && !strings.HasPrefix(p.Defaults, "okhttp"):
		return fmt.Errorf("--authenticate is OkHttp's: --defaults %s has no authenticator that always answers", p.Defaults)
	case p.Defaults == "hc5" && p.HC5Retries != "none" && (p.Status == 429 || p.Status == 503):
		return fmt.Errorf("--status %d with HttpClient 5's default retry strategy is exp-c's question: add --hc5-retries none", p.Status)
	}
	if p.RetryAfter != "" {
		for i := 0; i < len(p.RetryAfter); i++ {
			if c := p.RetryAfter[i]; c < ' ' || c > '~' {
				return fmt.Errorf("--retry-after must be printable ASCII, got %q", p.RetryAfter)
			}
		}
	}
	return nil
}

// predictFollowUp answers a follow-up question: the requests the server receives, each
// answered after --delay, and how the call ends.
func (p *Predictor) predictFollowUp() results.Prediction {
	method := p.Method
	if method == "" {
		method = "GET"
	}
	answer := model.Answer{Status: p.Status, RetryAfter: p.RetryAfter}
	if p.Status >= 300 && p.Status < 400 {
		answer.Location = model.NewURL
	}
	answers := []model.Answer{answer}
	if p.StatusTimes > 0 {
		answers = make([]model.Answer, p.StatusTimes+1)
		for i := range p.StatusTimes {
			answers[i] = answer
		}
		answers[p.StatusTimes] = model.Answer{Status: 200}
	}
	body := method != "GET" && method != "HEAD"
	r := rulesOfPreset(p.Defaults, p)
	got := model.FollowUps(r, model.FollowRules{RetryOnConnectionFailure: r.Resend.On, NoRedirects: p.NoRedirects, Authenticate: p.Authenticate},
		model.FollowCall{Method: method, Body: body, OneShot: p.OneShotBody && body, Answers: answers})
	out := results.Prediction{
		Scenario:         scenario(p.Params()),
		Outcome:          got.Outcome,
		TotalMs:          results.Ms(time.Duration(len(got.Sent)) * p.Delay),
		ServerExecutions: len(got.Sent),
		Attempts:         []results.Attempt{},
	}
	for i, s := range got.Sent {
		o, why := vocab.OK, fmt.Sprintf("%s answered %d", s.Method, answers[min(i, len(answers)-1)].Status)
		if i == len(got.Sent)-1 && got.Outcome != vocab.OK {
			o, why = got.Outcome, why+": "+got.Err
		}
		out.Attempts = append(out.Attempts, results.Attempt{
			StartMs: *results.Ms(time.Duration(i) * p.Delay), EndMs: results.Ms(time.Duration(i+1) * p.Delay),
			Outcome: o, Executed: true, Phases: []results.PhaseSpan{{Phase: vocab.PhaseWait, Ms: results.Ms(p.Delay)}}, Why: why,
		})
	}
	times := "every request"
	if p.StatusTimes > 0 {
		times = fmt.Sprintf("the first %d requests, then 200", p.StatusTimes)
	}
	out.Explanation = []string{
		fmt.Sprintf("The server answers %d to %s.", p.Status, times),
		followUpClients[p.Defaults] + ".",
		fmt.Sprintf("The server receives %s: %s.", vocab.Plural(len(got.Sent), "request"), model.DescribeSent(got.Sent)),
	}
	if got.Outcome == vocab.OK {
		out.Explanation = append(out.Explanation, fmt.Sprintf("The call returns the %d.", got.Status))
	} else {
		out.Explanation = append(out.Explanation, fmt.Sprintf("The call fails: %s.", got.Err))
	}
	return out
}
