package probe

import (
	"strconv"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
)

// kind says what a scenario's row measures and how the model is asked about it.
type kind int

const (
	kindCall        kind = iota // one call, cold: when the client left, how often it sent
	kindPooled                  // two calls in sequence: the second finds the first's connection
	kindFresh                   // one call the server kills on a fresh connection (model.Downstream.KillNew)
	kindCut                     // one call whose body the server cuts (model.Downstream.Cut)
	kindStatus                  // one call answered by a status or a redirect (model.FollowUps)
	kindBurst                   // calls at once to a slow server: the pool
	kindUnreachable             // one call to an address whose SYNs go unanswered
	kindTLS                     // one call to a TLS listener with a fault (model.PredictPreFirst)
	kindLookup                  // one call whose name lookup fails or is slow, in namespaces of its own
	kindStorm                   // calls open loop at a rate against a FIFO downstream that pauses (storm.go)
)

// Scenario is one thing the server does to the client, and how the command is asked to call
// it. Scenarios returns them; each is bounded by its Cap.
type Scenario struct {
	// Name is the scenario's name in --only and in its cap's flag (--silent-cap).
	Name string
	// Title says what the server does, in a few words.
	Title string
	// Method, Calls, Concurrency and Pause are what the command is asked to do.
	Method             string
	Calls, Concurrency int
	Pause              time.Duration
	// Cap bounds the command's run: at the cap it is killed with all it started. It includes the
	// command's start-up (a JVM's second), so it is longer than the server's part.
	Cap time.Duration

	kind        kind
	rate        float64          // kindStorm: calls a second
	reservation bool             // the server counts executions as reservations
	path        string           // the request path and query on the fake server
	idleTimeout time.Duration    // the server's keep-alive timeout, for kindPooled
	down        model.Downstream // what the model is told the server does
	response    model.Response   // kindStatus: what every request is answered
	tlsFault    fakesrv.TLSFault // kindTLS: the listener's fault
	pre         model.PreFirst   // kindTLS, kindLookup: what the model is told
	// lead is the command's start-up as measured: from its start to its first connection's
	// accept, which is where the model's call starts; 0 when unknown (no connection reached
	// the server, or not run yet). It moves the model's horizon (horizon).
	lead time.Duration
}

// horizon is the latest time, on the model's clock (from the call's start), at which a call
// the model ends is expected to have ended before the cap: the cap less the command's start-up
// as measured and afterCall, or less startup when the start-up is unknown. The cap is the
// scaled one (--cap-scale), so the horizon scales with it: a go-retryablehttp call the model
// ends at 20 s ends before a cap of 21 s (7 s x 3) when the command started in milliseconds.
func (s Scenario) horizon() time.Duration {
	if s.lead > 0 {
		return s.Cap - s.lead - afterCall
	}
	return s.Cap - startup
}

// The scenarios' fixed shapes. They are short so that a whole probe of a client with 1 s
// timeouts takes well under a minute, and long enough to tell a 1 s timeout per read from a
// deadline: the trickle outlasts four of them while no gap reaches one.
const (
	stallMargin  = 5 * time.Second // a silent server stays silent this much past the cap
	trickleBytes = 8
	trickleEvery = 500 * time.Millisecond
	slowHead     = 3 * time.Second
	reserveDelay = 2 * time.Second
	burstCalls   = 20
	burstDelay   = 500 * time.Millisecond
	cutBytes     = 100                    // the body-cut scenarios' Content-Length
	cutAfter     = 40                     // and the bytes sent before the cut
	serverIdle   = 300 * time.Millisecond // the idle-closed scenario's keep-alive timeout
	// pooledPause is the pause between the pooled scenarios' two calls: long enough for a
	// client to return its connection to the pool, which Node's clients do only some
	// event-loop turns after the call resolved; without it they open a second connection
	// and the dead pooled one is never tried.
	pooledPause = 100 * time.Millisecond
	idlePause   = 700 * time.Millisecond // and the client's pause between its two calls
	// startup is how much of a cap the model leaves to the command's own start-up when it was
	// not measured (Scenario.horizon): a call the model ends later than Cap - startup is
	// expected to be still running at the cap.
	startup = 2 * time.Second
	// afterCall is how much of a cap the model leaves, besides the measured start-up, to the
	// command's work after its call ended (its report, its exit) and to a client timer that
	// fires late.
	afterCall = 500 * time.Millisecond
)

// Scenarios returns every scenario with its default cap, in the order a probe runs them.
func Scenarios() []Scenario {
	get := func(name, title string, cap time.Duration, k kind, path string, d model.Downstream) Scenario {
		return Scenario{Name: name, Title: title, Method: "GET", Calls: 1, Concurrency: 1, Cap: cap, kind: k, path: path, down: d}
	}
	pooled := func(name, title, method, fail string, kill model.Kill) Scenario {
		s := get(name, title, 8*time.Second, kindPooled, "/delay?fail="+fail+"&fail-on=2", model.Downstream{KillAfterRead: kill, Method: method})
		s.Method, s.Calls, s.Pause = method, 2, pooledPause
		return s
	}
	idle := func(name, method string) Scenario {
		s := get(name, "an idle pooled connection the server closed ("+method+")", 8*time.Second, kindPooled, "/delay",
			model.Downstream{IdleFor: idlePause, ServerIdleTimeout: serverIdle, Method: method})
		s.Method, s.Calls, s.Pause, s.idleTimeout = method, 2, idlePause, serverIdle
		return s
	}
	cut := func(name, title, how string, k model.Kill, chunked bool) Scenario {
		return get(name, title, 8*time.Second, kindCut, fakesrv.BodyCut{Bytes: cutBytes, After: cutAfter, How: how, Chunked: chunked}.Path(),
			model.Downstream{Cut: k, Chunked: chunked})
	}
	status := func(name, title, path string, r model.Response) Scenario {
		s := get(name, title, 8*time.Second, kindStatus, path, model.Downstream{})
		s.response = r
		return s
	}
	// A client that honours the Retry-After of 5 s needs the cap to outlast it.
	status503wait := status("status-503-5", "503 with Retry-After: 5", "/status/503?retry-after=5", model.Response{Status: 503, RetryAfter: "5"})
	status503wait.Cap = 12 * time.Second
	burst := get("burst", strconv.Itoa(burstCalls)+" calls at once to a server taking "+burstDelay.String(), 15*time.Second, kindBurst,
		"/delay?delay="+burstDelay.String(), model.Downstream{Delay: burstDelay})
	burst.Concurrency = burstCalls
	reserve := get("reserve", "a reservation answered after "+reserveDelay.String(), 8*time.Second, kindCall,
		"/reserve?delay="+reserveDelay.String()+"&order=probe", model.Downstream{Delay: reserveDelay})
	reserve.Method, reserve.reservation = "POST", true
	return append([]Scenario{
		get("instant", "an instant answer", 10*time.Second, kindCall, "/delay", model.Downstream{}),
		get("silent", "a silent server", 13*time.Second, kindCall, "/stall", model.Downstream{Stall: true}),
		get("trickle", "the head at once, then a byte every "+trickleEvery.String()+" for "+(trickleBytes*trickleEvery).String(), 8*time.Second, kindCall,
			"/trickle?bytes="+strconv.Itoa(trickleBytes)+"&every="+trickleEvery.String(), model.Downstream{Bytes: trickleBytes, Every: trickleEvery}),
		get("slow-head", "the head after "+slowHead.String(), 7*time.Second, kindCall,
			"/delay?delay="+slowHead.String()+"&bytes=10", model.Downstream{Delay: slowHead, Bytes: 10}),
		reserve,
		// The server kills every request, a re-sent one's too, on its new connection.
		get("fresh-close", "closed after reading, on a fresh connection", 8*time.Second, kindFresh, "/close-after-read",
			model.Downstream{KillAfterRead: model.KillClose, KillNew: true}),
		get("fresh-reset", "reset after reading, on a fresh connection", 8*time.Second, kindFresh, "/reset",
			model.Downstream{KillAfterRead: model.KillReset, KillNew: true}),
		cut("body-cut", "a body of "+strconv.Itoa(cutBytes)+" bytes closed (FIN) after "+strconv.Itoa(cutAfter), fakesrv.FailClose, model.KillClose, false),
		cut("body-cut-reset", "a body of "+strconv.Itoa(cutBytes)+" bytes reset (RST) after "+strconv.Itoa(cutAfter), fakesrv.FailReset, model.KillReset, false),
		cut("body-cut-chunked", "a chunked body closed (FIN) after "+strconv.Itoa(cutAfter)+" bytes", fakesrv.FailClose, model.KillClose, true),
		pooled("pooled-close", "closed after reading, on a pooled connection (GET)", "GET", fakesrv.FailClose, model.KillClose),
		pooled("pooled-close-post", "closed after reading, on a pooled connection (POST)", "POST", fakesrv.FailClose, model.KillClose),
		pooled("pooled-reset", "reset after reading, on a pooled connection (GET)", "GET", fakesrv.FailReset, model.KillReset),
		pooled("pooled-reset-post", "reset after reading, on a pooled connection (POST)", "POST", fakesrv.FailReset, model.KillReset),
		idle("idle-closed", "GET"),
		idle("idle-closed-post", "POST"),
		status("status-408", "408 Request Timeout", "/status/408", model.Response{Status: 408}),
		status("status-503-0", "503 with Retry-After: 0", "/status/503?retry-after=0", model.Response{Status: 503, RetryAfter: "0"}),
		status503wait,
		status("redirect-loop", "a redirect loop", "/redirect-loop", model.Response{Status: 302, Location: model.SameURL}),
		burst,
		get("unreachable", "an address whose SYNs go unanswered", 8*time.Second, kindUnreachable, "/delay", model.Downstream{HostDown: true}),
		stormScenario(),
	}, preFirstScenarios()...)
}

// Group says in a few words what a scenario is about, for a short list of them: the server's
// time, a dead connection, the answer's status, the pool and the network, TLS, the lookup.
func (s Scenario) Group() string {
	switch s.kind {
	case kindCall:
		return "the server's time"
	case kindPooled, kindFresh:
		return "a dead connection"
	case kindCut:
		return "a broken body"
	case kindStatus:
		return "the answer's status"
	case kindBurst, kindUnreachable:
		return "the pool and the network"
	case kindTLS:
		return "the TLS handshake"
	case kindStorm:
		return "the load"
	}
	return "the name lookup"
}

// ScenarioNames lists the scenarios' names, in order.
func ScenarioNames() []string {
	var names []string
	for _, s := range Scenarios() {
		names = append(names, s.Name)
	}
	return names
}

// requestPath is the path the command is sent to; the silent server's stall ends past the
// cap, so that only the command can end it.
func (s Scenario) requestPath() string {
	if s.down.Stall {
		return s.path + "?max=" + (s.Cap + stallMargin).String()
	}
	return s.path
}
