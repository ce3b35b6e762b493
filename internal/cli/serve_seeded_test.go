package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/results"
)

// predictJSON runs labrun predict with args and decodes its tail answer.
func predictJSON(t *testing.T, args ...string) results.TailPrediction {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"labrun", "predict", "--format", "json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("predict %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var p results.TailPrediction
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("decode %s: %v", out.String(), err)
	}
	return p
}

// TestServeSeededFailuresPrinted is the acceptance of seeded failures: labrun predict prints
// the numbers seed 7 fails at 0.1 among 1,000 requests; labrun serve, driven by two clients
// at once with fail=reset, fails exactly those, on two runs (a reset between them). The calls
// are POSTs: net/http sends a GET whose pooled connection was reset again by itself, and each
// such replay takes a number of its own.
func TestServeSeededFailuresPrinted(t *testing.T) {
	want := predictJSON(t, "--fail-rate", "0.1", "--seed", "7", "--requests", "1000").Failing
	if len(want) < 70 || len(want) > 130 {
		t.Fatalf("predict: %d failing numbers, want about 100", len(want))
	}
	s := startServe(t, "--quiet")
	for run := 1; run <= 2; run++ {
		resp, err := http.Post(s.url+"/stats/reset", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		jobs := make(chan struct{}, 1000)
		for range 1000 {
			jobs <- struct{}{}
		}
		close(jobs)
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed := 0
		for range 2 {
			tr := &http.Transport{MaxIdleConnsPerHost: 4}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for range 4 {
				wg.Go(func() {
					for range jobs {
						resp, err := c.Post(s.url+"/delay?fail-rate=0.1&seed=7&fail=reset", "text/plain", strings.NewReader("x"))
						if err != nil {
							mu.Lock()
							failed++
							mu.Unlock()
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
		}
		wg.Wait()
		resp, err = http.Get(s.url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Seeds map[string]struct {
				Requests      int   `json:"requests"`
				FailedNumbers []int `json:"failed_numbers"`
			} `json:"seeds"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := st.Seeds["7"]
		if got.Requests != 1000 || !slices.Equal(got.FailedNumbers, want) || failed != len(want) {
			t.Errorf("run %d: %d requests, failed %v (%d resets seen by the clients); predicted %v", run, got.Requests, got.FailedNumbers, failed, want)
		}
	}
}

// TestPredictTail: the tail question's figures for lognormal:80ms:0.4, and its usage errors.
func TestPredictTail(t *testing.T) {
	p := predictJSON(t, "--delay-dist", "lognormal:80ms:0.4", "--read-timeout", "150ms", "--retries", "2", "--requests", "2000", "--seed", "11")
	if p.TimedOut < 0.0575 || p.TimedOut > 0.0585 || len(p.Quantiles) != 4 || p.Quantiles[2].Ms < 202 || p.Quantiles[2].Ms > 204 {
		t.Errorf("timed out %v, quantiles %v; want 5.8%% and a p99 of 203 ms", p.TimedOut, p.Quantiles)
	}
	if n := len(p.Slow); n < 80 || n > 150 {
		t.Errorf("%d of 2000 too slow, want about 116", n)
	}
	for _, args := range [][]string{
		{"--fail-rate", "2"}, {"--delay-dist", "lognormal:80ms"}, {"--requests", "5"}, {"--fail", "reset"},
		{"--fail-rate", "0.1", "--fail", "600"}, {"--delay-dist", "fixed:1s", "--bytes", "3"}, {"--delay-dist", "fixed:1s", "--explain"},
		{"--delay-dist", "fixed:1s", "--requests", "100001"}, {"--storm", "--fail-rate", "0.1"}, {"--seed", "3"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"labrun", "predict"}, args...), &out, &errb)
		if code != exitUsage || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("predict %s: exit %d, stdout %q, stderr %q; want 2 and one line", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
}
