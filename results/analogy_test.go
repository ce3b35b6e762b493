package results

import "testing"

// TestAnalogy: a client is named only when at least half the judged rows agree with it and
// none ties with it.
func TestAnalogy(t *testing.T) {
	for _, tt := range []struct {
		tied          []string
		agree, judged int
		want          string
	}{
		{nil, 30, 31, "behaves most like hc5 (30 of 31 rows agree)"},
		{nil, 2, 4, "behaves most like hc5 (2 of 4 rows agree)"},
		{nil, 1, 4, "behaves like no client labrun knows: at most 1 of 4 rows agree with one (hc5)"},
		{nil, 0, 2, "behaves like no client labrun knows: at most 0 of 2 rows agree with one (hc5)"},
		{nil, 0, 0, "behaves like no client labrun can name: no row was judged"},
		{[]string{"go", "netty"}, 4, 4, "behaves like hc5, go and netty alike, a tie the rows cannot break (4 of 4 rows agree with each)"},
		{[]string{"go"}, 4, 4, "behaves like hc5 and go alike, a tie the rows cannot break (4 of 4 rows agree with each)"},
		{[]string{"go", "netty", "jdk", "hc4"}, 2, 2, "behaves like hc5, go, netty and 2 others alike, a tie the rows cannot break (2 of 2 rows agree with each)"},
		{[]string{"go"}, 1, 4, "behaves like no client labrun knows: at most 1 of 4 rows agree with one (hc5)"},
	} {
		if got := Analogy("hc5", tt.tied, tt.agree, tt.judged); got != tt.want {
			t.Errorf("Analogy(%q, %d, %d): got %q, want %q", tt.tied, tt.agree, tt.judged, got, tt.want)
		}
	}
}
