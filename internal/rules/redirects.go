package rules

import "strconv"

// limitFollow is a library that follows 301, 302, 303, 307 and 308 with a Location and fails
// once it has sent requests requests for one call (the first included); 303, and 301 or 302
// after a POST, are sent as a GET without a body, as browsers do. requests 0 follows nothing:
// the redirect is the call's answer. It repeats no other status.
type limitFollow struct {
	requests int
	err      string
}

// reads implements followRule: NoRedirects only.
func (limitFollow) reads() FollowRules { return FollowRules{NoRedirects: true} }

// step implements followRule.
func (f limitFollow) step(r FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	next := &StepNext{Method: req.Method, Body: req.Body, URL: a.Location}
	switch a.Status {
	case 301, 302, 303:
		if a.Status == 303 || req.Method == "POST" {
			next.Method, next.Body = "GET", false
		}
	case 307, 308:
	default:
		return nil, nil
	}
	if f.requests == 0 || a.Location == "" || r.NoRedirects {
		return nil, nil
	}
	if st.Sent+1 >= f.requests {
		return nil, &FollowError{Msg: f.err}
	}
	return next, nil
}

// maxRedirects returns the rule of a library that follows at most n redirects, and fails on
// the response of the request after them: n + 1 requests, err its message.
func maxRedirects(n int, err string) FollowUps {
	return FollowUps{limitFollow{requests: n + 1, err: err + " (" + strconv.Itoa(n) + ")"}}
}
