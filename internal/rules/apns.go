package rules

import "time"

// APNsRule holds the thresholds of the APNs sender's interceptor (an OkHttp 3.5 network
// interceptor, docs/http2.md), which ejects the connection to an address that turned slow:
// after a call that took `took` to an address whose average is `avg`,
//   - an address with more than BadCalls calls, avg > BadAvg and took > avg is bad;
//   - else, while the worst average seen is below BadAvg: with more than MinCalls calls in
//     all, avg > SlowAvg, took > avg and avg > MaxAvgShare x the worst average, it is bad too.
//
// Statistics are kept for MaxAddrs addresses at most (the least recently used goes first);
// every Sweep, entries unused for IdleDrop are dropped. A zero Sweep or IdleDrop never drops;
// a zero MaxAddrs keeps every address. The client's interceptor (client/h2.APNs) and the
// model (model.H2Ejection) both apply this one struct.
type APNsRule struct {
	BadCalls    int
	BadAvg      time.Duration
	MinCalls    int
	SlowAvg     time.Duration
	MaxAvgShare float64
	MaxAddrs    int
	IdleDrop    time.Duration
	Sweep       time.Duration
}

// APNsAllocationLimit is the interceptor's cap on every connection's streams (OkHttp's
// RealConnection.allocationLimit as it set it).
const APNsAllocationLimit = 60

// APNsProduction returns the interceptor's thresholds as they ran in production: 20 calls,
// 20 s, 1,000 calls, 5 s, 0.9, 100 addresses, 10 minutes, a sweep every minute.
func APNsProduction() APNsRule {
	return APNsRule{
		BadCalls: 20, BadAvg: 20 * time.Second, MinCalls: 1000, SlowAvg: 5 * time.Second,
		MaxAvgShare: 0.9, MaxAddrs: 100, IdleDrop: 10 * time.Minute, Sweep: time.Minute,
	}
}

// APNsScaled returns labrun's defaults: the production values with every time divided by 100
// and the total call count by 10, so that a slow node is found within seconds; the rules and
// the other counts are unchanged.
func APNsScaled() APNsRule {
	r := APNsProduction()
	r.BadAvg /= 100
	r.SlowAvg /= 100
	r.IdleDrop /= 100
	r.Sweep /= 100
	r.MinCalls /= 10
	return r
}
