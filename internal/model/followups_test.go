package model

import (
	"reflect"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

// sentTimes returns n copies of s.
func sentTimes(s Sent, n int) []Sent {
	out := make([]Sent, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestFollowUps(t *testing.T) {
	get, postBody := Sent{Method: "GET", Body: false}, Sent{Method: "POST", Body: true}
	okRules := FollowRules{RetryOnConnectionFailure: true}
	postCall := func(answers ...Answer) FollowCall { return FollowCall{Method: "POST", Body: true, Answers: answers} }
	getCall := func(answers ...Answer) FollowCall { return FollowCall{Method: "GET", Answers: answers} }
	oneShot := func(c FollowCall) FollowCall { c.OneShot = true; return c }
	chain := func(n int) FollowCall { // n distinct redirects, then 200
		a := make([]Answer, n+1)
		for i := range n {
			a[i] = Answer{Status: 302, Location: NewURL}
		}
		a[n] = Answer{Status: 200}
		return getCall(a...)
	}
	tests := []struct {
		name    string
		p       Profile
		r       FollowRules
		c       FollowCall
		sent    []Sent
		outcome vocab.Outcome
		status  int
		err     string
	}{
		// OkHttp 3.13.1 followUpRequest: 408 is repeated once, even a POST; a second 408 is returned.
		{"okhttp 408 twice", OkHttp, okRules, postCall(Answer{Status: 408}), sentTimes(postBody, 2), vocab.OK, 408, ""},
		{"okhttp 408 then 200", OkHttp, okRules, postCall(Answer{Status: 408}, Answer{Status: 200}), sentTimes(postBody, 2), vocab.OK, 200, ""},
		{"okhttp 408, no recovery", OkHttp, FollowRules{}, postCall(Answer{Status: 408}), []Sent{postBody}, vocab.OK, 408, ""},
		{"okhttp 408, Retry-After 1", OkHttp, okRules, postCall(Answer{Status: 408, RetryAfter: "1"}), []Sent{postBody}, vocab.OK, 408, ""},
		{"okhttp 408, Retry-After 0", OkHttp, okRules, postCall(Answer{Status: 408, RetryAfter: "0"}), sentTimes(postBody, 2), vocab.OK, 408, ""},
		{"okhttp 408, Retry-After -1 is a delay", OkHttp, okRules, postCall(Answer{Status: 408, RetryAfter: "-1"}), []Sent{postBody}, vocab.OK, 408, ""},
		{"okhttp 408, one-shot body", OkHttp, okRules, oneShot(postCall(Answer{Status: 408})), []Sent{postBody}, vocab.OK, 408, ""},
		// 503 only on Retry-After: 0, once.
		{"okhttp 503 twice, Retry-After 0", OkHttp, okRules, getCall(Answer{Status: 503, RetryAfter: "0"}), sentTimes(get, 2), vocab.OK, 503, ""},
		{"okhttp 503, Retry-After 00", OkHttp, okRules, getCall(Answer{Status: 503, RetryAfter: "00"}), sentTimes(get, 2), vocab.OK, 503, ""},
		{"okhttp 503, Retry-After 5", OkHttp, okRules, getCall(Answer{Status: 503, RetryAfter: "5"}), []Sent{get}, vocab.OK, 503, ""},
		{"okhttp 503, no Retry-After", OkHttp, okRules, getCall(Answer{Status: 503}), []Sent{get}, vocab.OK, 503, ""},
		{"okhttp 503, Retry-After +0", OkHttp, okRules, getCall(Answer{Status: 503, RetryAfter: "+0"}), []Sent{get}, vocab.OK, 503, ""},
		// Redirects: 307 and 308 only for GET and HEAD; the others turn a POST into a GET.
		{"okhttp POST 307", OkHttp, okRules, postCall(Answer{Status: 307, Location: NewURL}, Answer{Status: 200}), []Sent{postBody}, vocab.OK, 307, ""},
		{"okhttp GET 308", OkHttp, okRules, getCall(Answer{Status: 308, Location: NewURL}, Answer{Status: 200}), sentTimes(get, 2), vocab.OK, 200, ""},
		{"okhttp POST 302", OkHttp, okRules, postCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 200}), []Sent{postBody, get}, vocab.OK, 200, ""},
		{"okhttp POST 301", OkHttp, okRules, postCall(Answer{Status: 301, Location: NewURL}, Answer{Status: 200}), []Sent{postBody, get}, vocab.OK, 200, ""},
		{"okhttp PROPFIND 302 keeps the body", OkHttp, okRules, FollowCall{Method: "PROPFIND", Body: true, Answers: []Answer{{Status: 302, Location: NewURL}, {Status: 200}}},
			[]Sent{{Method: "PROPFIND", Body: true}, {Method: "PROPFIND", Body: true}}, vocab.OK, 200, ""},
		{"okhttp 300", OkHttp, okRules, getCall(Answer{Status: 300, Location: NewURL}, Answer{Status: 200}), sentTimes(get, 2), vocab.OK, 200, ""},
		{"okhttp 302 without Location", OkHttp, okRules, getCall(Answer{Status: 302}), []Sent{get}, vocab.OK, 302, ""},
		{"okhttp followRedirects(false)", OkHttp, FollowRules{RetryOnConnectionFailure: true, NoRedirects: true}, getCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 200}), []Sent{get}, vocab.OK, 302, ""},
		{"okhttp https to http", OkHttp, okRules, FollowCall{Method: "GET", HTTPS: true, Answers: []Answer{{Status: 302, Location: PlainHTTP}, {Status: 200}}}, sentTimes(get, 2), vocab.OK, 200, ""},
		{"okhttp followSslRedirects(false)", OkHttp, FollowRules{NoSslRedirects: true}, FollowCall{Method: "GET", HTTPS: true, Answers: []Answer{{Status: 302, Location: PlainHTTP}, {Status: 200}}}, []Sent{get}, vocab.OK, 302, ""},
		{"okhttp redirect loop", OkHttp, okRules, getCall(Answer{Status: 302, Location: SameURL}), sentTimes(get, 21), vocab.Failed, 0, "Too many follow-up requests: 21"},
		{"okhttp 25 redirects", OkHttp, okRules, chain(25), sentTimes(get, 21), vocab.Failed, 0, "Too many follow-up requests: 21"},
		{"okhttp 20 redirects", OkHttp, okRules, chain(20), sentTimes(get, 21), vocab.OK, 200, ""},
		// Authentication.
		{"okhttp 401, Authenticator.NONE", OkHttp, okRules, getCall(Answer{Status: 401}), []Sent{get}, vocab.OK, 401, ""},
		{"okhttp 401, always answering", OkHttp, FollowRules{Authenticate: true}, getCall(Answer{Status: 401}), sentTimes(get, 21), vocab.Failed, 0, "Too many follow-up requests: 21"},
		{"okhttp 401, always answering, one-shot body", OkHttp, FollowRules{Authenticate: true}, oneShot(postCall(Answer{Status: 401})), []Sent{postBody}, vocab.Failed, 0, "Cannot retry streamed HTTP body"},
		{"okhttp 407 without a proxy", OkHttp, okRules, getCall(Answer{Status: 407}), []Sent{get}, vocab.Failed, 0, "Received HTTP_PROXY_AUTH (407) code while not using proxy"},
		{"okhttp 3.13 returns 421", OkHttp, okRules, getCall(Answer{Status: 421}), []Sent{get}, vocab.OK, 421, ""},

		// net/http: redirectBehavior and the default CheckRedirect; nothing else repeated.
		{"go 408", Go, FollowRules{}, postCall(Answer{Status: 408}), []Sent{postBody}, vocab.OK, 408, ""},
		{"go 503, Retry-After 0", Go, FollowRules{}, getCall(Answer{Status: 503, RetryAfter: "0"}), []Sent{get}, vocab.OK, 503, ""},
		{"go POST 307 with GetBody", Go, FollowRules{}, postCall(Answer{Status: 307, Location: NewURL}, Answer{Status: 200}), sentTimes(postBody, 2), vocab.OK, 200, ""},
		{"go POST 308, one-shot body", Go, FollowRules{}, oneShot(postCall(Answer{Status: 308, Location: NewURL}, Answer{Status: 200})), []Sent{postBody}, vocab.OK, 308, ""},
		{"go POST 303", Go, FollowRules{}, postCall(Answer{Status: 303, Location: NewURL}, Answer{Status: 200}), []Sent{postBody, get}, vocab.OK, 200, ""},
		{"go PUT 301", Go, FollowRules{}, FollowCall{Method: "PUT", Body: true, Answers: []Answer{{Status: 301, Location: NewURL}, {Status: 200}}}, []Sent{{Method: "PUT", Body: true}, get}, vocab.OK, 200, ""},
		{"go 300 is not followed", Go, FollowRules{}, getCall(Answer{Status: 300, Location: NewURL}, Answer{Status: 200}), []Sent{get}, vocab.OK, 300, ""},
		{"go ErrUseLastResponse", Go, FollowRules{NoRedirects: true}, getCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 200}), []Sent{get}, vocab.OK, 302, ""},
		{"go redirect loop", Go, FollowRules{}, getCall(Answer{Status: 302, Location: SameURL}), sentTimes(get, 10), vocab.Failed, 0, "stopped after 10 redirects"},
		{"go 9 redirects", Go, FollowRules{}, chain(9), sentTimes(get, 10), vocab.OK, 200, ""},
		{"go 401", Go, FollowRules{}, getCall(Answer{Status: 401}), []Sent{get}, vocab.OK, 401, ""},
		{"go 407", Go, FollowRules{}, getCall(Answer{Status: 407}), []Sent{get}, vocab.OK, 407, ""},

		// HttpClient 5.2.1 RedirectExec.
		{"hc5 POST 307", HC5, FollowRules{}, postCall(Answer{Status: 307, Location: NewURL}, Answer{Status: 200}), sentTimes(postBody, 2), vocab.OK, 200, ""},
		{"hc5 POST 302", HC5, FollowRules{}, postCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 200}), []Sent{postBody, get}, vocab.OK, 200, ""},
		{"hc5 PUT 302 keeps PUT", HC5, FollowRules{}, FollowCall{Method: "PUT", Body: true, Answers: []Answer{{Status: 302, Location: NewURL}, {Status: 200}}}, sentTimes(Sent{Method: "PUT", Body: true}, 2), vocab.OK, 200, ""},
		{"hc5 PUT 303", HC5, FollowRules{}, FollowCall{Method: "PUT", Body: true, Answers: []Answer{{Status: 303, Location: NewURL}, {Status: 200}}}, []Sent{{Method: "PUT", Body: true}, get}, vocab.OK, 200, ""},
		{"hc5 POST 302, one-shot body", HC5, FollowRules{}, oneShot(postCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 200})), []Sent{postBody}, vocab.OK, 302, ""},
		{"hc5 disableRedirectHandling", HC5, FollowRules{NoRedirects: true}, getCall(Answer{Status: 302, Location: NewURL}), []Sent{get}, vocab.OK, 302, ""},
		{"hc5 300 is not followed", HC5, FollowRules{}, getCall(Answer{Status: 300, Location: NewURL}), []Sent{get}, vocab.OK, 300, ""},
		{"hc5 redirect loop is circular", HC5, FollowRules{}, getCall(Answer{Status: 302, Location: SameURL}), sentTimes(get, 2), vocab.Failed, 0, "Circular redirect to"},
		// RedirectLocations holds every location redirected to: one that redirects to itself is
		// circular at once (HttpClient 5.2.1, held to the real library by TestFollowUpsRealLibraries).
		{"hc5 a redirect to a URL that redirects to itself", HC5, FollowRules{}, getCall(Answer{Status: 302, Location: NewURL}, Answer{Status: 302, Location: SameURL}), sentTimes(get, 2), vocab.Failed, 0, "Circular redirect to"},
		{"hc5 60 redirects", HC5, FollowRules{}, chain(60), sentTimes(get, 51), vocab.Failed, 0, "Maximum redirects (50) exceeded"},
		{"hc5 50 redirects", HC5, FollowRules{}, chain(50), sentTimes(get, 51), vocab.OK, 200, ""},
		{"hc5 408", HC5, FollowRules{}, postCall(Answer{Status: 408}), []Sent{postBody}, vocab.OK, 408, ""},
		{"hc5 401", HC5, FollowRules{}, getCall(Answer{Status: 401}), []Sent{get}, vocab.OK, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FollowUps(tt.p, tt.r, tt.c)
			if !reflect.DeepEqual(got.Sent, tt.sent) || got.Outcome != tt.outcome || got.Status != tt.status || !strings.HasPrefix(got.Err, tt.err) || (tt.err == "") != (got.Err == "") {
				t.Errorf("got %v, %s, status %d, %q; want %v, %s, %d, %q", got.Sent, got.Outcome, got.Status, got.Err, tt.sent, tt.outcome, tt.status, tt.err)
			}
		})
	}
}

func TestDescribeSent(t *testing.T) {
	for _, tt := range []struct {
		sent []Sent
		want string
	}{
		{nil, "nothing sent"},
		{[]Sent{{Method: "POST", Body: true}, {Method: "POST", Body: true}, {Method: "GET", Body: false}}, "POST+body ×2, GET"},
		{[]Sent{{Method: "GET", Body: false}}, "GET"},
	} {
		if got := DescribeSent(tt.sent); got != tt.want {
			t.Errorf("DescribeSent(%v): got %q, want %q", tt.sent, got, tt.want)
		}
	}
}

// TestJavaFollowUps: the JDK's HttpClient follows nothing by default, HttpURLConnection
// gives a loop up after 20 requests, HttpClient 4.5 redirects a POST only on a 303; as
// measured with the real libraries (labrun probe's redirect-loop row, docs/clients.md).
func TestJavaFollowUps(t *testing.T) {
	loop := FollowCall{Method: "GET", Answers: []Answer{{Status: 302, Location: SameURL}}}
	post := func(status int) FollowCall {
		return FollowCall{Method: "POST", Body: true, Answers: []Answer{{Status: status, Location: NewURL}, {Status: 200}}}
	}
	for _, tt := range []struct {
		name    string
		p       Profile
		c       FollowCall
		sent    int
		outcome vocab.Outcome
		status  int
	}{
		{"jdk: a loop is not followed", JDK, loop, 1, vocab.OK, 302},
		{"jdk: a 503 is returned", JDK, FollowCall{Method: "GET", Answers: []Answer{{Status: 503, RetryAfter: "0"}}}, 1, vocab.OK, 503},
		{"urlconnection: a loop ends at 20 requests", URLConnection, loop, URLConnectionMaxRedirects, vocab.Failed, 0},
		{"urlconnection: a POST answered 302 goes on as a GET", URLConnection, post(302), 2, vocab.OK, 200},
		{"hc4: a loop is refused at the second request", HC4, loop, 2, vocab.Failed, 0},
		{"hc4: a POST answered 302 is returned", HC4, post(302), 1, vocab.OK, 302},
		{"hc4: a POST answered 303 goes on as a GET", HC4, post(303), 2, vocab.OK, 200},
	} {
		got := FollowUps(tt.p, FollowRules{}, tt.c)
		if len(got.Sent) != tt.sent || got.Outcome != tt.outcome || got.Status != tt.status {
			t.Errorf("%s: got %d sent, %s %d (%s); want %d, %s %d", tt.name, len(got.Sent), got.Outcome, got.Status, got.Err, tt.sent, tt.outcome, tt.status)
		}
	}
	if got := FollowUps(URLConnection, FollowRules{}, post(302)); got.Sent[1] != (Sent{Method: "GET"}) {
		t.Errorf("urlconnection: a POST's 302 follow-up is %+v, want a GET without a body", got.Sent[1])
	}
}
