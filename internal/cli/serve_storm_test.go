package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/upstream"
)

// TestServeStorm starts labrun serve --storm, pauses it, leaves a request behind, and reads
// /stats: the abandoned request's work was done and counted wasted.
func TestServeStorm(t *testing.T) {
	s := startServe(t, "--storm", "--addr", "127.0.0.1:0", "--capacity", "2", "--service", "20ms")
	res, err := http.Post(s.url+"/pause?for=200ms", "", nil)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("pause: %v, %v", res, err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/orders?call=c1", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatal("answered during the pause")
	}
	var st upstream.FIFOStats
	for end := time.Now().Add(3 * time.Second); st.Executed == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		res, err := http.Get(s.url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := (upstream.FIFOStats{Received: 1, Executed: 1, Wasted: 1, Calls: 1, Amplification: 1}); st != want {
		t.Errorf("/stats: got %+v, want %+v", st, want)
	}
}

func TestServeStormUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--capacity", "3"}, "labrun: --capacity needs --storm\n"},
		{[]string{"serve", "--storm", "--capacity", "0"}, "labrun: --capacity must be 1 to 10000, got 0\n"},
		{[]string{"serve", "--storm", "--service", "0s"}, "labrun: --service must be above 0 and at most 1m0s, got 0s\n"},
		{[]string{"serve", "--storm", "--grpc"}, "labrun: --grpc does not apply to --storm: --storm starts its own server\n"},
	} {
		got := runArgs(t, context.Background(), experiments.All(), false, tt.args...)
		if got.code != exitUsage || got.stderr != tt.want {
			t.Errorf("%v: got exit %d, stderr %q; want %d, %q", tt.args, got.code, got.stderr, exitUsage, tt.want)
		}
	}
}
