package rules

// OkHttp314 returns OkHttp 3.14's rules (okhttp parent-3.14.9), with s applied: 3.13's, but a
// pooled connection that failed after carrying an exchange keeps its route, so the retry may
// dial that address again before the selector's routes (ExchangeFinder.retryCurrentRoute,
// hasRouteToTry). 3.13's StreamAllocation.hasMoreRoutes gives a pooled connection's failure no
// route: the retry takes the next pooled connection or the selector's next route.
func OkHttp314(s OkHttpSettings) Rules {
	r := OkHttp313(s)
	r.Library = "OkHttp 3.14.9"
	r.Resend.CurrentRoute = true
	return r
}

func init() {
	p := okHTTPPreset("okhttp@3.14", "OkHttp 3.14", OkHttp314)
	p.Rank, p.FitRank = 7, 6
	p.Card.Reuse = "RealConnection.isHealthy, as 3.13"
	p.Card.Resend = "as 3.13, but a pooled connection that failed keeps its route: the retry may dial that address again before the selector's routes (ExchangeFinder.retryCurrentRoute), one attempt more on an endpoint that kills every request"
	p.Card.Source = "okhttp parent-3.14.9 source: ExchangeFinder, Transmitter"
	p.Profile = &Profile{Rank: 4, Description: "the okhttp profile with OkHttp 3.14's route rule: a pooled connection that " +
		"failed keeps its route, so the retry may dial that address again before the others"}
	Register(p)
}
