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
	"retryablehttp": "go-retryablehttp v0.7.8 retries 429 and every 5xx but 501 (baseRetryPolicy), after Retry-After exactly for 429 and 503 (DefaultBackoff), " +
		"each attempt net/http's Client.Do (at most 10 redirects, not retried)",
	"resty": "resty v2.17.2 retries no status without AddRetryCondition, and any error (too many redirects included) once SetRetryCount is set; " +
		"each attempt net/http's Client.Do",
	"got": "got 14.6.6 retries 408, 413, 429, 500, 502, 503, 504, 521, 522, 524 for GET, PUT, HEAD, DELETE, OPTIONS, TRACE (calculate-retry-delay.js), " +
		"Retry-After 0 as no header; at most 10 redirects (MaxRedirectsError, not retried)",
	"urllib3": "urllib3 1.26.12's Retry retries 413, 429 and 503 when they carry Retry-After (is_retry), 0 as the back-off; requests follows at most 30 redirects",
	"axios":   "axios 1.21.1 retries nothing; follow-redirects 1.16.2 follows at most 21 redirects",
	"undici":  "undici 7.30.2's request() retries nothing and follows no redirect",
	"httpx":   "httpx 0.23.3 retries no status and follows no redirect (follow_redirects=False)",
	"aiohttp": "aiohttp 3.8.4 retries no status and follows at most 10 redirects (max_redirects, the 10th raises)",
}

// checkFollowUp reports a follow-up question that makes no sense, naming the flags.
func (p *Predictor) checkFollowUp() error {
	if _, ok := followUpClients[p.Defaults]; !ok {
		var names []string
		for _, pre := range model.Presets() {
			if _, ok := followUpClients[pre.Name]; ok {
				names = append(names, pre.Name)
			}
		}
		return fmt.Errorf("--status needs --defaults %s: the follow-up rules labrun has read", strings.Join(names, ", "))
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
	l := p.Limits()
	r := l.Rules
	got := model.FollowUpsLayered(l, model.FollowRules{RetryOnConnectionFailure: r.Resend.On, NoRedirects: p.NoRedirects, Authenticate: p.Authenticate},
		model.FollowCall{Method: method, Body: body, OneShot: p.OneShotBody && body, Answers: answers})
	answered := time.Duration(len(got.Sent)) * p.Delay // each request's answer, the same at both ends of the band
	out := results.Prediction{
		Scenario:         scenario(p.Params()),
		Outcome:          got.Outcome,
		TotalMs:          results.Ms(answered + got.Waits),
		TotalMaxMs:       bandMs(answered+got.Waits, answered+got.WaitsMax),
		ServerExecutions: len(got.Sent),
		Attempts:         []results.Attempt{},
	}
	// Each request takes --delay; a retry layer's attempt starts after its wait.
	try, inTry, wait := 0, 0, time.Duration(0)
	for i, s := range got.Sent {
		if inTry == got.Tries[try].Sent {
			try, inTry = try+1, 0
			wait = got.Tries[try].Start
		}
		inTry++
		at := time.Duration(i)*p.Delay + wait
		o, why := vocab.OK, fmt.Sprintf("%s answered %d", s.Method, answers[min(i, len(answers)-1)].Status)
		if i == len(got.Sent)-1 && got.Outcome != vocab.OK {
			o, why = got.Outcome, why+": "+got.Err
		}
		if try > 0 && inTry == 1 {
			why += fmt.Sprintf(" (the retry layer's attempt %d)", try+1)
		}
		out.Attempts = append(out.Attempts, results.Attempt{
			StartMs: *results.Ms(at), EndMs: results.Ms(at + p.Delay),
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
	if len(got.Tries) > 1 {
		w := fmt.Sprintf("%v", got.Waits)
		if got.WaitsMax > got.Waits {
			w = fmt.Sprintf("%v to %v", got.Waits, got.WaitsMax)
		}
		out.Explanation = append(out.Explanation, fmt.Sprintf("Its retry layer sends the call %s, waiting %s in all.", vocab.Plural(len(got.Tries), "time"), w))
	}
	if got.Outcome == vocab.OK {
		out.Explanation = append(out.Explanation, fmt.Sprintf("The call returns the %d.", got.Status))
	} else {
		out.Explanation = append(out.Explanation, fmt.Sprintf("The call fails: %s.", got.Err))
	}
	return out
}
