package rules

import (
	"testing"
	"time"
)

// TestResendAgain holds each library's re-send rule to its source, one failure at a time.
func TestResendAgain(t *testing.T) {
	hc5 := HC5(HC5Settings{AutomaticRetries: true})
	io := func(method string, sent bool) Failure {
		return Failure{Class: ClassIO, Sent: sent, Method: method, Reused: true}
	}
	tests := []struct {
		name string
		r    Rules
		f    Failure
		done int
		want bool
	}{
		{"hc5 off: nothing", HC5(HC5Settings{}), io("GET", true), 0, false},
		{"hc5: an idempotent GET after an I/O error", hc5, io("GET", true), 0, true},
		{"hc5: once only", hc5, io("GET", true), 1, false},
		{"hc5: not a POST", hc5, io("POST", true), 0, false},
		{"hc5: a lowercase put is idempotent", hc5, io("put", true), 0, true},
		{"hc5: never a read timeout", hc5, Failure{Class: ClassSocketTimeout, Sent: true, Method: "GET"}, 0, false},
		{"hc5: never a refused connect", hc5, Failure{Class: ClassConnect, Method: "GET"}, 0, false},
		{"hc4: POST not sent yet", HC4(), io("POST", false), 0, true},
		{"hc4: POST sent", HC4(), io("POST", true), 0, false},
		{"hc4: DELETE, third re-send", HC4(), io("DELETE", true), 2, true},
		{"hc4: DELETE, fourth", HC4(), io("DELETE", true), 3, false},
		{"jdk: GET", JDK(JDKSettings{}), io("GET", true), 0, true},
		{"jdk: POST", JDK(JDKSettings{}), io("POST", true), 0, false},
		{"jdk: POST with enableAllMethodRetry", JDK(JDKSettings{EnableAllMethodRetry: true}), io("POST", true), 0, true},
		{"jdk: a refused connect, any method", JDK(JDKSettings{}), Failure{Class: ClassConnect, Method: "POST"}, 0, true},
		{"jdk: an unknown host", JDK(JDKSettings{}), Failure{Class: ClassUnknownHost, Method: "GET"}, 0, true},
		{"jdk: not a connect timeout", JDK(JDKSettings{}), Failure{Class: ClassConnectTimeout, Method: "GET"}, 0, false},
		{"jdk: a one-shot body is asked for again", JDK(JDKSettings{}), Failure{Class: ClassIO, Sent: true, Method: "GET", OneShot: true}, 0, true},
		{"urlconnection: POST", URLConnection(URLConnectionSettings{}), io("POST", true), 0, true},
		{"urlconnection: POST with retryPost=false", URLConnection(URLConnectionSettings{NoRetryPost: true}), io("POST", true), 0, false},
		{"urlconnection: not a one-shot body", URLConnection(URLConnectionSettings{}), Failure{Class: ClassIO, Sent: true, Method: "PUT", OneShot: true}, 0, false},
		{"okhttp: a POST after an I/O error", OkHttp313(OkHttpSettings{}), io("POST", true), 5, true},
		{"okhttp: not a read timeout after the send", OkHttp313(OkHttpSettings{}), Failure{Class: ClassSocketTimeout, Sent: true, Method: "GET"}, 0, false},
		{"okhttp: a handshake read timeout before the send", OkHttp313(OkHttpSettings{}), Failure{Class: ClassSocketTimeout, Method: "GET"}, 0, true},
		{"okhttp 3.2: a read timeout after the send", OkHttp32(OkHttpSettings{}), Failure{Class: ClassSocketTimeout, Sent: true, Method: "GET"}, 0, true},
		{"okhttp without retryOnConnectionFailure", OkHttp313(OkHttpSettings{NoRetryOnConnectionFailure: true}), io("GET", true), 0, false},
		{"okhttp: never a certificate", OkHttp313(OkHttpSettings{}), Failure{Class: ClassFatal, Method: "GET"}, 0, false},
		{"go: a reused GET", GoNet(), io("GET", true), 3, true},
		{"go: not a new connection's", GoNet(), Failure{Class: ClassIO, Sent: true, Method: "GET"}, 0, false},
		{"go: a POST with an Idempotency-Key", GoNet(), Failure{Class: ClassIO, Sent: true, Method: "POST", Key: true, Reused: true}, 0, true},
		{"go: not a POST without one", GoNet(), io("POST", true), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Resend.Again(tt.f, tt.done); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestValidateZero: a validate-after-inactivity of zero turns HttpClient 5.2.1's and 4.5's
// check off (TimeValue.isPositive; validateAfterInactivity > 0); 5.2.2 and later check every
// lease, which the field says.
func TestValidateZero(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Reuse
		v    time.Duration
		want time.Duration
	}{
		{"5.2.1, 0: off", HC5(HC5Settings{}).Reuse, 0, NoValidation},
		{"4.5, 0: off", HC4().Reuse, 0, NoValidation},
		{"5.2.1, 2s", HC5(HC5Settings{}).Reuse, 2 * time.Second, 2 * time.Second},
		{"5.2.2, 0: every lease", Reuse{ZeroChecksEveryLease: true}, 0, everyLease},
	} {
		if got := tt.r.Validate(tt.v); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBoundOf: which user limit bounds a handshake or a lookup.
func TestBoundOf(t *testing.T) {
	to := Timeouts{Connect: 300 * time.Millisecond, Read: 200 * time.Millisecond}
	for _, tt := range []struct {
		r    Rules
		want time.Duration
	}{
		{HC5(HC5Settings{}), 0},
		{HC4(), 300 * time.Millisecond},
		{OkHttp313(OkHttpSettings{}), 200 * time.Millisecond},
		{JDK(JDKSettings{}), 200 * time.Millisecond},
		{GoNet(), 0},
	} {
		if got := tt.r.PreFirst.Handshake.Of(to).Limit; got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.r.Library, got, tt.want)
		}
	}
}

// TestStatusAgain: HttpClient 5's DefaultHttpRequestRetryStrategy repeats a 429 or 503 once.
func TestStatusAgain(t *testing.T) {
	r := HC5(HC5Settings{AutomaticRetries: true}).Resend
	ms := time.Millisecond
	tests := []struct {
		name       string
		status     int
		retryAfter string
		repeatable bool
		timeout    time.Duration
		done       int
		again      bool
		pause      time.Duration
	}{
		{"503 without Retry-After", 503, "", true, 0, 0, true, time.Second},
		{"429 Retry-After 3", 429, "3", true, 0, 0, true, 3 * time.Second},
		{"Retry-After 0 is not positive", 503, "0", true, 0, 0, true, time.Second},
		{"Retry-After garbage", 503, "soon", true, 0, 0, true, time.Second},
		{"500 is not retried", 500, "", true, 0, 0, false, 0},
		{"non-repeatable entity", 503, "", false, 0, 0, false, 0},
		{"once", 503, "", true, 0, 1, false, 0},
		// 5.6: the 1 s default interval is longer than a 250 ms response timeout.
		{"response timeout under 1 s", 503, "", true, 250 * ms, 0, false, 0},
		{"response timeout of 1 s", 503, "", true, time.Second, 0, true, time.Second},
		// HttpRequestRetryExec: a Retry-After longer than the response timeout ends the call.
		{"Retry-After 5 over a 1 s response timeout", 503, "5", true, time.Second, 0, false, 0},
		{"Retry-After 5 under a 10 s response timeout", 503, "5", true, 10 * time.Second, 0, true, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pause, again := r.StatusAgain(tt.status, tt.retryAfter, tt.repeatable, tt.timeout, tt.done, time.Now())
			if again != tt.again || pause != tt.pause {
				t.Errorf("got %v after %v, want %v after %v", again, pause, tt.again, tt.pause)
			}
		})
	}
	if _, again := HC5(HC5Settings{}).Resend.StatusAgain(503, "", true, 0, 0, time.Now()); again {
		t.Error("disableAutomaticRetries() repeats a 503")
	}
}

// TestHC5Idempotent: Method.isIdempotent (httpcore5), upper-cased first.
func TestHC5Idempotent(t *testing.T) {
	for m, want := range map[string]bool{"GET": true, "get": true, "": true, "HEAD": true, "PUT": true, "DELETE": true,
		"OPTIONS": true, "TRACE": true, "QUERY": true, "POST": false, "PATCH": false, "CONNECT": false, "PURGE": false} {
		if got := MethodsIdempotent.Has(m, false); got != want {
			t.Errorf("%q: got %v, want %v", m, got, want)
		}
	}
}

// TestBodyCut holds each preset's rule for a body cut short of its Content-Length to the
// libraries as measured (probe's body-cut and body-cut-reset scenarios): a FIN taken for the
// end or an error, a broken body re-sent by the library or its retry layer or not.
func TestBodyCut(t *testing.T) {
	tests := []struct {
		preset               string
		short, resent, layer bool
	}{
		{"go", false, false, false},
		{"hc5", false, false, false},
		{"hc4", false, false, false},
		{"okhttp", false, false, false},
		{"jdk", false, false, false},
		{"urlconnection", true, false, false},
		{"ruby", true, true, false},
		{"urllib3", true, false, false},
		{"httpx", false, false, false},
		{"aiohttp", false, false, false},
		{"got", false, false, true},
		{"axios", false, false, false},
		{"undici", false, false, false},
		{"retryablehttp", false, false, false},
		{"resty", false, false, true},
	}
	for _, tt := range tests {
		p, ok := Lookup(tt.preset)
		if !ok {
			t.Fatalf("no preset %s", tt.preset)
		}
		r := p.Default()
		if r.Body.ShortOnClose != tt.short || r.Resend.InBody != tt.resent || r.Retry.BodyRetried != tt.layer {
			t.Errorf("%s: short on close %v, re-sent in body %v, layer retries it %v; want %v, %v, %v",
				tt.preset, r.Body.ShortOnClose, r.Resend.InBody, r.Retry.BodyRetried, tt.short, tt.resent, tt.layer)
		}
		if r.Body.Reset == "" || r.Body.Chunked == "" || r.Body.Source == "" || (r.Body.Close == "") != r.Body.ShortOnClose {
			t.Errorf("%s: the errors and the source must be named: %+v", tt.preset, r.Body)
		}
	}
	if !GoNet().Resend.Again(Failure{Class: ClassIO, Sent: true, Method: "GET", Reused: true}, 0) ||
		GoNet().Resend.Again(Failure{Class: ClassIO, Sent: true, Method: "GET", Reused: true, InBody: true}, 0) {
		t.Errorf("go: a reused connection's failure before the head is re-sent, one in the body is not")
	}
}
