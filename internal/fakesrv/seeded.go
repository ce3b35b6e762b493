package fakesrv

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

// The seeded faults of a Behaviour (query keys fail-rate, seed, delay-dist): a request that
// carries one is numbered under its seed, 1, 2, 3, ... in the order the server starts
// handling them, since start or the last Reset; whether number n fails and its delay are
// pure functions of (seed, n) (internal/dist), which labrun predict prints in advance.

// FailStall is the Behaviour.Fail that holds the request unanswered, as /stall does; a
// status from 400 to 599 answers that status at once.
const FailStall = "stall"

// DefaultSeededFail is what a failure of fail-rate does without a fail key.
const DefaultSeededFail = "503"

// MaxSeed bounds a seed, as labrun predict's --seed.
const MaxSeed = 1 << 30

// MaxSeeds bounds the seeds a server numbers between two resets; MaxListed the failing
// numbers /stats lists per seed (their count stays whole).
const (
	MaxSeeds  = 1000
	MaxListed = 1000
)

// parseSeeded reads the seeded keys into b, after the others.
func parseSeeded(b *Behaviour, q url.Values) error {
	if s := q.Get("fail-rate"); s != "" {
		r, err := dist.ParseRate(s)
		if err != nil {
			return fmt.Errorf("fail-rate %w", err)
		}
		b.FailRate = r
	}
	if s := q.Get("delay-dist"); s != "" {
		d, err := dist.Parse(s)
		if err != nil {
			return fmt.Errorf("delay-dist: %w", err)
		}
		b.DelayDist = d.String()
	}
	b.Seed = dist.DefaultSeed
	if s := q.Get("seed"); s != "" {
		n, err := parseCount(q, "seed", 0, MaxSeed)
		if err != nil {
			return err
		}
		b.Seed = uint64(n)
	}
	rated := q.Get("fail-rate") != ""
	switch {
	case q.Get("seed") != "" && !rated && b.DelayDist == "":
		return errors.New("seed needs fail-rate or delay-dist: it numbers their draws")
	case rated && b.FailOn > 0:
		return errors.New("fail-rate and fail-on exclude each other: one says which requests fail by chance, the other by their place on the connection")
	case b.DelayDist != "" && b.Delay > 0:
		return errors.New("delay and delay-dist exclude each other")
	case rated && b.FailRate == 0:
		b.Fail = "" // a rate of 0 fails nothing, whatever fail says
	case rated && b.Fail == "":
		b.Fail = DefaultSeededFail
	}
	if !b.Seeded() {
		b.Seed = 0
	}
	return nil
}

// checkFail checks a Behaviour.Fail: close, reset, stall or a status from 400 to 599.
func checkFail(s string) error {
	switch s {
	case "", FailClose, FailReset, FailStall:
		return nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 400 && n <= 599 && strconv.Itoa(n) == s {
		return nil
	}
	return fmt.Errorf("fail: unknown mode %q, want %s, %s, %s or a status from 400 to 599", s, FailClose, FailReset, FailStall)
}

// Seeded says whether b draws from its seed.
func (b Behaviour) Seeded() bool { return b.FailRate > 0 || b.DelayDist != "" }

// SeedStats are a seed's requests in /stats.
type SeedStats struct {
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// FailedNumbers are the numbers that failed, the first MaxListed of them.
	FailedNumbers []int `json:"failed_numbers"`
}

// seedCounts numbers the seeded requests per seed.
type seedCounts struct {
	mu      sync.Mutex // guards bySeed and refused
	bySeed  map[uint64]*SeedStats
	refused int // seeded requests refused because MaxSeeds seeds were known
}

func newSeedCounts() *seedCounts { return &seedCounts{bySeed: map[uint64]*SeedStats{}} }

// next numbers a request of seed that fails or not at rate; 0 when the table of seeds is full.
func (c *seedCounts) next(seed uint64, rate float64) (n int, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.bySeed[seed]
	if !ok {
		if len(c.bySeed) >= MaxSeeds {
			c.refused++
			return 0, false
		}
		st = &SeedStats{FailedNumbers: []int{}}
		c.bySeed[seed] = st
	}
	st.Requests++
	n = st.Requests
	if failed = dist.Fails(seed, uint64(n), rate); failed {
		st.Failed++
		if len(st.FailedNumbers) < MaxListed {
			st.FailedNumbers = append(st.FailedNumbers, n)
		}
	}
	return n, failed
}

func (c *seedCounts) snapshot() (map[string]SeedStats, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]SeedStats, len(c.bySeed))
	for seed, st := range c.bySeed {
		cp := *st
		cp.FailedNumbers = slices.Clone(st.FailedNumbers)
		out[strconv.FormatUint(seed, 10)] = cp
	}
	return out, c.refused
}

func (c *seedCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bySeed = map[uint64]*SeedStats{}
	c.refused = 0
}

// draw numbers a seeded request, draws its delay, and says whether it fails (a request
// without a seed: by Fail and FailOn); answered when it was answered instead (507: too many
// seeds), complete as the answer was.
func (x *exchange) draw(b *Behaviour) (fail bool, answered, complete bool) {
	if !b.Seeded() {
		return b.Fail != "" && (b.FailOn == 0 || b.FailOn == x.rec.ConnSeq), false, false
	}
	n, failed := x.s.seeds.next(b.Seed, b.FailRate)
	if n == 0 {
		return false, true, x.text(http.StatusInsufficientStorage, fmt.Sprintf(
			"seed table full: %d distinct seeds since the last reset (POST /stats/reset clears it)", MaxSeeds))
	}
	x.rec.SeedNo = n
	if b.DelayDist != "" {
		d, _ := dist.Parse(b.DelayDist) // checked by ParseBehaviour
		x.rec.Drawn = d.Draw(b.Seed, uint64(n))
	}
	x.publish()
	return failed, false, false
}

// delayOf is the delay b asks for: its own, or the one drawn.
func (x *exchange) delayOf(b Behaviour) time.Duration {
	if b.DelayDist != "" {
		return x.rec.Drawn
	}
	return b.Delay
}

// failNow carries out b's failure.
func (x *exchange) failNow(b Behaviour) bool {
	x.rec.Failed = b.Fail
	x.publish()
	switch b.Fail {
	case FailReset:
		return x.reset()
	case FailClose:
		return x.closeAfterRead()
	case FailStall:
		return x.stall(b)
	}
	code, _ := strconv.Atoi(b.Fail)
	msg := "status " + b.Fail
	if x.rec.SeedNo > 0 {
		msg = fmt.Sprintf("%s: request %d of seed %d fails", msg, x.rec.SeedNo, b.Seed)
	}
	return x.text(code, msg)
}

// seededParams are the seeded keys of the endpoint table: fail-rate, seed, delay-dist.
func seededParams() []Param {
	return []Param{
		{Name: "fail-rate", In: InQuery, Value: "R",
			Meaning: "fail this share of the requests (0 to 1) as fail says (default 503), the same request numbers for the same seed: labrun predict --fail-rate R --seed S lists them in advance"},
		{Name: "seed", In: InQuery, Value: "N",
			Meaning: fmt.Sprintf("with fail-rate or delay-dist: the seed (0 to 2^30, default %d); its requests are numbered 1, 2, ... as the server takes them, and /stats lists the numbers that failed", dist.DefaultSeed)},
		delayDistParam(),
	}
}

func delayDistParam() Param {
	return Param{Name: "delay-dist", In: InQuery, Value: "DIST",
		Meaning: "draw the delay from a distribution, seeded as fail-rate: " + dist.Grammar + " (durations at most " + dist.Max.String() + ")"}
}

func bandwidthParam() Param {
	return Param{Name: "bandwidth", In: InQuery, Value: "N",
		Meaning: fmt.Sprintf("send the body at N bytes per second, 1 to %d, the bytes due at each wake-up of at most one per %v", MaxBandwidth, CoarseTick)}
}

func seededExamples() []Example {
	return []Example{
		{`curl -s -o /dev/null -w '%{http_code} ' "$U/delay?fail-rate=0.1&seed=7&[1-6]"`,
			"On a fresh server: 200 200 503 200 503 200. Requests 3 and 5 of seed 7 fail, as labrun predict --fail-rate 0.1 --seed 7 says before the run."},
		{`curl -s -o /dev/null -w '%{time_starttransfer}\n' "$U/delay?delay-dist=lognormal:80ms:0.4&seed=42"`,
			"Request 1 of seed 42 waits 85 ms, the next ones 105, 106, 52, 60 ms; over many, half wait under 80 ms and 1% over 203 ms."},
		{`curl -s -o /dev/null -w '%{time_total}\n' "$U/delay?bytes=100000&bandwidth=50000"`,
			"About 2 s: 100,000 bytes at 50,000 bytes a second."},
	}
}
