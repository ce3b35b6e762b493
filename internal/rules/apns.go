package rules

import "time"

// APNsRule holds the thresholds of the APNs sender's interceptor over OkHttp 3.5, which ejects
// the connection to an address that turned slow (docs/http2.md has the rule); the client
// (client/h2.APNs) and the model (model.H2Ejection) both apply it. Zero Sweep, IdleDrop or
// MaxAddrs never drop an address's statistics.
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

// APNsAllocationLimit is the interceptor's cap on a connection's streams.
const APNsAllocationLimit = 60

// APNsProduction returns the interceptor's thresholds as they ran in production.
func APNsProduction() APNsRule {
	return APNsRule{
		BadCalls: 20, BadAvg: 20 * time.Second, MinCalls: 1000, SlowAvg: 5 * time.Second,
		MaxAvgShare: 0.9, MaxAddrs: 100, IdleDrop: 10 * time.Minute, Sweep: time.Minute,
	}
}

// APNsScaled returns labrun's defaults: production's times over 100 and MinCalls over 10, so
// that a slow node is found within seconds.
func APNsScaled() APNsRule {
	r := APNsProduction()
	r.BadAvg /= 100
	r.SlowAvg /= 100
	r.IdleDrop /= 100
	r.Sweep /= 100
	r.MinCalls /= 10
	return r
}
