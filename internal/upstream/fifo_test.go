package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestFIFO(t *testing.T) {
	d, err := NewFIFO(1, 20*time.Millisecond, FIFOOptions{Record: true, Failing: func(c string) bool { return c == "bad" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	get := func(ctx context.Context, call string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+"/?call="+call, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(context.Background(), "a"); err != nil || code != 200 {
		t.Fatalf("got %d, %v; want 200", code, err)
	}
	if code, err := get(context.Background(), "bad"); err != nil || code != 503 {
		t.Fatalf("got %d, %v; want 503 after the work", code, err)
	}
	// A caller that leaves while its request waits out a pause: the work is still done, and
	// counted wasted.
	resp, err := http.Post(d.URL+"/pause?for=100ms", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("pause: %v, %v", resp, err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := get(ctx, "a"); err == nil {
		t.Fatal("the paused FIFO answered within 30 ms")
	}
	deadline := time.Now().Add(2 * time.Second)
	for d.Stats().Executed < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r, err := http.Get(d.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var got FIFOStats
	if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := FIFOStats{Received: 3, Executed: 3, Wasted: 1, Calls: 2, Amplification: 1.5}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if n := len(d.Executions()); n != 3 || len(d.Received()) != 3 {
		t.Errorf("%d executions recorded, want 3", n)
	}
}
