package rules

import (
	"reflect"
	"testing"
)

// TestFollowStep plays the step the client runs, response by response, and checks what it
// asks for and what it remembers: the first request, the previous status, the follow-ups
// sent.
func TestFollowStep(t *testing.T) {
	const url = "http://server/a"
	get := StepRequest{Method: "GET", URL: url}
	post := StepRequest{Method: "POST", Body: true, URL: url}
	type turn struct {
		req  StepRequest
		a    StepAnswer
		want *StepNext
		err  *FollowError
	}
	for _, tt := range []struct {
		name  string
		f     FollowUps
		s     FollowRules
		turns []turn
		sent  int
	}{
		{"the zero rule follows nothing", FollowUps{}, FollowRules{}, []turn{
			{get, StepAnswer{Status: 302, Location: "http://server/b"}, nil, nil},
		}, 0},
		{"okhttp: a 503 with Retry-After: 0 once, not after a 503", OkHttp313(OkHttpSettings{}).FollowUps, FollowRules{}, []turn{
			{get, StepAnswer{Status: 503, RetryAfter: "0"}, &StepNext{Method: "GET", URL: url}, nil},
			{get, StepAnswer{Status: 503, RetryAfter: "0"}, nil, nil},
		}, 1},
		{"okhttp: another host drops Authorization, a POST becomes a GET", OkHttp313(OkHttpSettings{}).FollowUps, FollowRules{}, []turn{
			{post, StepAnswer{Status: 302, Location: "http://other/b"}, &StepNext{Method: "GET", URL: "http://other/b", DropAuthorization: true}, nil},
		}, 1},
		{"okhttp: a 401 with an authenticator", OkHttp313(OkHttpSettings{}).FollowUps, FollowRules{Authenticate: true}, []turn{
			{get, StepAnswer{Status: 401}, &StepNext{Method: "GET", URL: url, Credentials: true}, nil},
		}, 1},
		{"okhttp: followSslRedirects(false)", OkHttp313(OkHttpSettings{}).FollowUps, FollowRules{NoSslRedirects: true}, []turn{
			{StepRequest{Method: "GET", URL: "https://server/a"}, StepAnswer{Status: 302, Location: "http://server/b"}, nil, nil},
		}, 0},
		{"hc5: a 307 after a 303 copies the original POST", HC5(HC5Settings{}).FollowUps, FollowRules{}, []turn{
			{post, StepAnswer{Status: 303, Location: "http://server/b"}, &StepNext{Method: "GET", URL: "http://server/b", FromOriginal: true}, nil},
			{StepRequest{Method: "GET", URL: "http://server/b"}, StepAnswer{Status: 307, Location: "http://server/c"},
				&StepNext{Method: "POST", Body: true, URL: "http://server/c", FromOriginal: true}, nil},
			{post, StepAnswer{Status: 302, Location: "http://server/b"}, nil, &FollowError{Msg: "Circular redirect to", URL: "http://server/b"}},
		}, 2},
		{"hc5: a one-shot original is not redirected", HC5(HC5Settings{}).FollowUps, FollowRules{}, []turn{
			{StepRequest{Method: "POST", Body: true, OneShot: true, URL: url}, StepAnswer{Status: 302, Location: "http://server/b"}, nil, nil},
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var st FollowState
			for i, tn := range tt.turns {
				got, err := tt.f.Step(tt.s, &st, tn.req, tn.a)
				if !reflect.DeepEqual(got, tn.want) || !reflect.DeepEqual(err, tn.err) {
					t.Errorf("turn %d: got %+v, %+v; want %+v, %+v", i, got, err, tn.want, tn.err)
				}
				if st.Prior != tn.a.Status {
					t.Errorf("turn %d: got prior %d, want %d", i, st.Prior, tn.a.Status)
				}
			}
			if st.Original != tt.turns[0].req {
				t.Errorf("got original %+v, want %+v", st.Original, tt.turns[0].req)
			}
			if st.Sent != tt.sent {
				t.Errorf("got %d follow-ups sent, want %d", st.Sent, tt.sent)
			}
		})
	}
}

// TestFollowReads: the settings each rule reads, which client.Config.Validate holds the user's
// to.
func TestFollowReads(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    FollowUps
		want FollowRules
	}{
		{"okhttp", OkHttp313(OkHttpSettings{}).FollowUps, FollowRules{RetryOnConnectionFailure: true, NoRedirects: true, NoSslRedirects: true, Authenticate: true}},
		{"hc5", HC5(HC5Settings{}).FollowUps, FollowRules{NoRedirects: true}},
		{"go", GoNet().FollowUps, FollowRules{NoRedirects: true}},
		{"jdk", JDK(JDKSettings{}).FollowUps, FollowRules{}},
	} {
		if got := tt.f.Reads(); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
