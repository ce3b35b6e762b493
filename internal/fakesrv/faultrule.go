package fakesrv

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// FaultRule is one fault of a proxy (WithUpstream): the requests whose method and path it
// matches get its Behaviour, written in the endpoints' query grammar, around their forwarding.
type FaultRule struct {
	// Method is the method matched; "*" matches any.
	Method string
	// Path is the path matched: exactly, or every path it starts when it ends in "*".
	Path string
	// Behaviour is the fault: Delay holds the upstream's answer back, Stall withholds it, Every
	// trickles its body, Fail breaks the connection instead.
	Behaviour Behaviour
	// Status, when not 0, answers this status after Delay without forwarding the request.
	Status int
	// Text is the rule as written, normalised: its name in /labrun/stats and the log.
	Text string
}

const (
	MaxFaultRules   = 64
	maxFaultRuleLen = 1024
)

var proxyOnlyKeys = []string{"stall", "status"}

// notForwardingKeys are the Behaviour keys a proxy refuses, with why: the upstream answers.
var notForwardingKeys = map[string]string{
	"order":      "the upstream keeps its own state",
	"idempotent": "the upstream keeps its own state",
	"bytes":      "the body is the upstream's",
}

// faultKeys lists a rule's keys: the behaviour endpoints' query parameters, less
// notForwardingKeys, and proxyOnlyKeys.
func faultKeys() []string {
	keys := slices.Clone(proxyOnlyKeys)
	for _, e := range behaviourEndpoints() {
		for _, p := range e.Params {
			if p.In == InQuery && notForwardingKeys[p.Name] == "" && !slices.Contains(keys, p.Name) {
				keys = append(keys, p.Name)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// ParseFaultRule reads "METHOD PATH KEY=VALUE ...", such as "POST /orders delay=2s" or
// "* /items/* fail=reset fail-on=2". The error names what is wrong, in one line.
func ParseFaultRule(line string) (FaultRule, error) {
	if len(line) > maxFaultRuleLen {
		return FaultRule{}, fmt.Errorf("a fault rule is at most %d bytes, got %d", maxFaultRuleLen, len(line))
	}
	if strings.ContainsAny(line, "\r\n") {
		return FaultRule{}, errors.New("a fault rule is one line")
	}
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return FaultRule{}, fmt.Errorf("fault rule %q: want METHOD PATH KEY=VALUE..., such as 'POST /orders delay=2s'", line)
	}
	r := FaultRule{Method: fields[0], Path: fields[1]}
	if r.Method != "*" && !validToken(r.Method) {
		return FaultRule{}, fmt.Errorf("fault rule %q: the method %q is not a method name (or * for any)", line, r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") || strings.ContainsAny(r.Path, "?#") || strings.Contains(strings.TrimSuffix(r.Path, "*"), "*") {
		return FaultRule{}, fmt.Errorf("fault rule %q: the path must start with / and hold no query; a * may end it", line)
	}
	q := url.Values{}
	known := faultKeys()
	for _, kv := range fields[2:] {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || v == "":
			return FaultRule{}, fmt.Errorf("fault rule %q: %q is not KEY=VALUE", line, kv)
		case notForwardingKeys[k] != "":
			return FaultRule{}, fmt.Errorf("fault rule %q: %s does not apply to a proxy: %s", line, k, notForwardingKeys[k])
		case !slices.Contains(known, k):
			return FaultRule{}, fmt.Errorf("fault rule %q: unknown key %q, want one of %s", line, k, strings.Join(known, ", "))
		case q.Has(k):
			return FaultRule{}, fmt.Errorf("fault rule %q: %s given twice", line, k)
		}
		q.Set(k, v)
	}
	b, err := ParseBehaviour("", q)
	if err != nil {
		return FaultRule{}, fmt.Errorf("fault rule %q: %w", line, err)
	}
	if q.Has("status") {
		if r.Status, err = pathNumber(q.Get("status"), "", "status", 200, maxStatus); err != nil {
			return FaultRule{}, fmt.Errorf("fault rule %q: %w", line, err)
		}
		if b.Stall || b.Fail != "" || b.Every > 0 || b.Bandwidth > 0 || b.DelayDist != "" {
			return FaultRule{}, fmt.Errorf("fault rule %q: status answers alone; it takes only delay", line)
		}
	}
	if b.Stall && (b.Fail != "" || b.Every > 0 || b.Bandwidth > 0) {
		return FaultRule{}, fmt.Errorf("fault rule %q: stall never answers; it takes no fail, every or bandwidth", line)
	}
	if b.FailOn > 0 && b.Fail == "" {
		return FaultRule{}, fmt.Errorf("fault rule %q: fail-on needs fail", line)
	}
	r.Behaviour = b
	r.Text = strings.Join(fields, " ")
	return r, nil
}

// validToken reports whether s is an HTTP token (RFC 9110, 5.6.2).
func validToken(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// matches reports whether the rule applies to a request with this method and path.
func (r FaultRule) matches(method, path string) bool {
	if r.Method != "*" && r.Method != method {
		return false
	}
	if prefix, ok := strings.CutSuffix(r.Path, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return path == r.Path
}

// checkFaultRules checks rules from ParseFaultRule.
func checkFaultRules(rules []FaultRule) error {
	if len(rules) > MaxFaultRules {
		return fmt.Errorf("at most %d fault rules, got %d", MaxFaultRules, len(rules))
	}
	for _, r := range rules {
		if r.Text == "" {
			return errors.New("a fault rule must come from ParseFaultRule")
		}
	}
	return nil
}

// statusText: "503 Service Unavailable".
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}
