package rules

// OkHttp32 returns OkHttp 3.0 to 3.2's rules (okhttp parent-3.2.0), with s applied: 3.13's,
// but every SocketTimeoutException is recoverable (StreamAllocation.isRecoverable: e instanceof
// SocketTimeoutException), so a read timeout after the request was sent moves the call to the
// next idle pooled connection (pooled connections use no route), then to a new connection per
// route left; the server executes every one of them. parent-3.3.0 stopped it
// (HttpEngine.isRecoverable adds && routeException).
func OkHttp32(s OkHttpSettings) Rules {
	r := OkHttp313(s)
	r.Library = "OkHttp 3.2.0"
	r.Resend.After |= Of(ClassSocketTimeout)
	r.Texts.ReadTimeoutRetry = "OkHttp 3.0-3.2 recovers the read timeout like any I/O error: the next pooled connection, else a new one per route"
	return r
}

func init() {
	p := okHTTPPreset("okhttp@3.2", "OkHttp 3.0 to 3.2", OkHttp32)
	p.Rank, p.FitRank = 8, 7
	p.Card.Call = "none (callTimeout came in 3.12)"
	p.Card.Reuse = "RealConnection.isHealthy, as later versions"
	p.Card.Resend = "every SocketTimeoutException is recoverable, a read timeout after the request was sent included: the call moves to the next pooled connection, then to a new one per route, each waiting a full read timeout (RealCall.getResponse, StreamAllocation.recover; fixed in 3.3.0)"
	p.Card.Source = "okhttp parent-3.2.0 source"
	p.Profile = &Profile{Rank: 3, Description: "the okhttp profile with OkHttp 3.0-3.2's recovery: a read timeout after " +
		"the request was sent moves the call to the next pooled connection, then to a new one per route (fixed in 3.3.0)"}
	Register(p)
}
