package vocab

import (
	"math"
	"strconv"
)

// OkHttpRetryAfter reads a Retry-After header as OkHttp's RetryAndFollowUpInterceptor.retryAfter
// does (3.13 and 4.x): no header is def, a value of digits its number of seconds, anything else
// (an HTTP date, "-1", "+0") Integer.MAX_VALUE. Its 408 and 503 rules repeat a request only
// when this is 0. The client and the model both read the header through it.
func OkHttpRetryAfter(v string, def int) int {
	if v == "" {
		return def
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return math.MaxInt32
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > math.MaxInt32 {
		return math.MaxInt32 // Integer.valueOf throws here; a delay is as good an answer
	}
	return n
}
