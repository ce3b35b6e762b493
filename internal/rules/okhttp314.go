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
