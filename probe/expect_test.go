package probe

import (
	"testing"

	"github.com/labrun/labrun/internal/rules"
)

// TestExpectJavaSwitches: --expect carries the JVM switches that change a library's re-send
// rule, HttpURLConnection's retryPost=false and the JDK's enableAllMethodRetry, into the
// rules the rows are judged against.
func TestExpectJavaSwitches(t *testing.T) {
	for _, tt := range []struct {
		client string
		l      ExpectLimits
		want   rules.Methods
	}{
		{"urlconnection", ExpectLimits{}, rules.MethodsAll},
		{"urlconnection", ExpectLimits{NoResendPost: true}, rules.MethodsAllButPost},
		{"jdk", ExpectLimits{ResendAnyMethod: true}, rules.MethodsAll},
	} {
		e, err := NewExpect(tt.client, tt.l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.limits.Rules.Resend.AfterMethods; got != tt.want {
			t.Errorf("%s %+v: re-sends after %v, want %v", tt.client, tt.l, got, tt.want)
		}
	}
}
