package predict

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// maxRetryAfter bounds --retry-after: an HTTP date is 29 bytes.
const maxRetryAfter = 64

// checkFollowUp reports a follow-up question that makes no sense, naming the flags.
func (p *Predictor) checkFollowUp() error {
	if preset(p.Defaults).FollowUps == "" {
		var names []string
		for _, pre := range rules.Presets() {
			if pre.FollowUps != "" {
				names = append(names, pre.Name)
			}
		}
		why := "no --defaults"
		if p.Defaults != "" {
			why = fmt.Sprintf("labrun has not read %s's", p.Defaults)
		}
		return fmt.Errorf("--status needs --defaults %s: the follow-up rules labrun has read (%s)", strings.Join(names, ", "), why)
	}
	switch {
	case p.Status < 101:
		return fmt.Errorf("--status-times, --retry-after, --no-redirects and --authenticate need --status (101 to 599)")
	case p.Stall || p.HostDown || p.Dropped || p.KillAfterRead != "" || p.Bytes > 0 || p.Queue > 0:
		return fmt.Errorf("--status excludes --stall, --host-down, --dropped, --kill-after-read, --bytes and --queue: it asks what follows an answer")
	case p.Authenticate && !rulesOfPreset(p.Defaults, p).FollowUps.Reads().Authenticate:
		return fmt.Errorf("--authenticate is OkHttp's: --defaults %s has no authenticator that always answers", p.Defaults)
	}
	for i := 0; i < len(p.RetryAfter); i++ {
		if c := p.RetryAfter[i]; c < ' ' || c > '~' {
			return fmt.Errorf("--retry-after must be printable ASCII, got %q", param.Cut(p.RetryAfter))
		}
	}
	if len(p.RetryAfter) > maxRetryAfter {
		return fmt.Errorf("--retry-after must be at most %d bytes (seconds or an HTTP date), got %d", maxRetryAfter, len(p.RetryAfter))
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
		TotalMs:          results.Ms(model.Later(answered, got.Waits)),
		TotalMaxMs:       bandMs(model.Later(answered, got.Waits), model.Later(answered, got.WaitsMax)),
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
		at := model.Later(time.Duration(i)*p.Delay, wait)
		o, why := vocab.OK, fmt.Sprintf("%s answered %d", s.Method, answers[min(i, len(answers)-1)].Status)
		if i == len(got.Sent)-1 && got.Outcome != vocab.OK {
			o, why = got.Outcome, why+": "+got.Err
		}
		switch {
		case inTry == 1 && got.Tries[try].Repeat:
			why += " (" + fmt.Sprintf(r.Texts.StatusRetry, answers[min(i-1, len(answers)-1)].Status, got.Tries[try].Start-got.Tries[try-1].Start) + ")"
		case try > 0 && inTry == 1:
			why += fmt.Sprintf(" (the retry layer's attempt %d)", try+1-repeats(got.Tries[:try+1]))
		}
		out.Attempts = append(out.Attempts, results.Attempt{
			StartMs: *results.Ms(at), EndMs: results.Ms(model.Later(at, p.Delay)),
			Outcome: o, Executed: true, Phases: []results.PhaseSpan{{Phase: vocab.PhaseWait, Ms: results.Ms(p.Delay)}}, Why: why,
		})
	}
	times := "every request"
	if p.StatusTimes > 0 {
		times = fmt.Sprintf("the first %d requests, then 200", p.StatusTimes)
	}
	out.Explanation = []string{
		fmt.Sprintf("The server answers %d to %s.", p.Status, times),
		preset(p.Defaults).FollowUps + ".",
		fmt.Sprintf("The server receives %s: %s.", vocab.Plural(len(got.Sent), "request"), model.DescribeSent(got.Sent)),
	}
	if n := repeats(got.Tries); n > 0 {
		out.Explanation = append(out.Explanation, fmt.Sprintf(r.Texts.StatusRetry, p.Status, got.Tries[len(got.Tries)-1].Start-got.Tries[len(got.Tries)-2].Start)+".")
	}
	if len(got.Tries)-repeats(got.Tries) > 1 {
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

// repeats counts the tries the library's retry strategy sent.
func repeats(ts []model.FollowTry) int {
	n := 0
	for _, t := range ts {
		if t.Repeat {
			n++
		}
	}
	return n
}
