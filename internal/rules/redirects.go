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

// Follow implements FollowUps.
func (f limitFollow) Follow(r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur := Sent{Method: c.Method, Body: c.Body}
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		next := cur
		switch a.Status {
		case 301, 302, 303:
			if a.Status == 303 || cur.Method == "POST" {
				next = Sent{Method: "GET"}
			}
		case 307, 308:
		default:
			return followOK(res, a.Status)
		}
		if f.requests == 0 || a.Location == NoLocation || r.NoRedirects {
			return followOK(res, a.Status)
		}
		if len(res.Sent) >= f.requests {
			return followFailed(res, f.err)
		}
		cur = next
	}
}

// maxRedirects returns the rule of a library that follows at most n redirects, and fails on
// the response of the request after them: n + 1 requests, err its message.
func maxRedirects(n int, err string) limitFollow {
	return limitFollow{requests: n + 1, err: err + " (" + strconv.Itoa(n) + ")"}
}
