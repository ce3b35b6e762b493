package rules

import (
	"math"
	"testing"
)

func TestOkHTTPRetryAfter(t *testing.T) {
	const long = math.MaxInt32
	tests := []struct {
		v    string
		def  int
		want int
	}{
		{"0", long, 0}, {"00", long, 0}, {"5", 0, 5}, {"", long, long}, {"", 0, 0}, {"-1", 0, long}, {"+0", 0, long}, {" 1", 0, long},
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0, long}, {"99999999999999999999999", 0, long},
	}
	for _, tt := range tests {
		if got := okHTTPRetryAfter(tt.v, tt.def); got != tt.want {
			t.Errorf("okHTTPRetryAfter(%q, %d): got %d, want %d", tt.v, tt.def, got, tt.want)
		}
	}
}
