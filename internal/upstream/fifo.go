package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// FIFO is a downstream of fixed capacity (exp-n's, serve --storm's): workers take requests in
// arrival order, none while paused, blind to callers that left. A request names its call and
// attempt (?call=&attempt=, or a Labrun-Call header); a failing call's get 503 after the work.
type FIFO struct {
	URL     string
	srv     *http.Server
	queue   chan *fifoJob
	service time.Duration
	failing func(call string) bool
	record  bool
	stop    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	from     time.Time
	until    time.Time
	arrivals []Execution
	done     []Execution
	stats    FIFOStats
	calls    map[string]bool
}

// Execution is a request received; Cost runs from its worker's previous end when it waited
// (0 otherwise), and Left says its caller had gone when the work ended.
type Execution struct {
	Call                 string
	Attempt              int
	Received, Start, End time.Time
	Cost                 time.Duration
	Left                 bool
}

// FIFOStats is what a FIFO counted (docs/serve.md).
type FIFOStats struct {
	Received      int     `json:"received"`
	Executed      int     `json:"executed"`
	Wasted        int     `json:"wasted"`
	Queued        int     `json:"queued"`
	Serving       int     `json:"serving"`
	Calls         int     `json:"calls"`
	Amplification float64 `json:"amplification"`
	Paused        bool    `json:"paused"`
}

type fifoJob struct {
	Execution
	ctx  context.Context
	done chan struct{}
}

// The bounds of the queue (beyond: 503 at once) and of the calls counted by name.
const (
	maxFIFOQueue = 1 << 16
	maxFIFOCalls = 1 << 17
)

// FIFOOptions: the address (127.0.0.1:0 when empty), whether requests are kept (Received,
// Executions) or only counted, and which calls fail.
type FIFOOptions struct {
	Addr    string
	Record  bool
	Failing func(call string) bool
}

// NewFIFO starts a FIFO of workers servers taking service each.
func NewFIFO(workers int, service time.Duration, o FIFOOptions) (*FIFO, error) {
	if workers < 1 || service <= 0 {
		return nil, errors.New("upstream: a FIFO needs a worker and a service time")
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	d := &FIFO{URL: "http://" + ln.Addr().String(), queue: make(chan *fifoJob, maxFIFOQueue), service: service,
		failing: o.Failing, record: o.Record, stop: make(chan struct{}), calls: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", d.serveStats)
	mux.HandleFunc("POST /pause", d.servePause)
	mux.HandleFunc("/", d.serve)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for range workers {
		d.wg.Add(1)
		go d.work()
	}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

// Pause makes the FIFO start no work from from until until.
func (d *FIFO) Pause(from, until time.Time) {
	d.mu.Lock()
	d.from, d.until = from, until
	d.mu.Unlock()
}

func (d *FIFO) work() {
	defer d.wg.Done()
	var prevEnd time.Time
	for {
		var j *fifoJob
		select {
		case j = <-d.queue:
		case <-d.stop:
			return
		}
		d.mu.Lock()
		from, until := d.from, d.until
		d.stats.Queued--
		d.stats.Serving++
		d.mu.Unlock()
		if now := time.Now(); !now.Before(from) && now.Before(until) {
			clock.SleepUntil(context.Background(), until)
		}
		j.Start = time.Now()
		clock.SleepUntil(context.Background(), j.Start.Add(d.service))
		j.End = time.Now()
		if j.Received.Before(prevEnd) && j.Start.Sub(prevEnd) < d.service {
			j.Cost = j.End.Sub(prevEnd)
		}
		prevEnd = j.End
		j.Left = j.ctx.Err() != nil
		d.mu.Lock()
		d.stats.Serving--
		d.stats.Executed++
		if j.Left {
			d.stats.Wasted++
		}
		if d.record {
			d.done = append(d.done, j.Execution)
		}
		d.mu.Unlock()
		close(j.done)
	}
}

// serve answers once the request's work is done.
func (d *FIFO) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	call := q.Get("call")
	if call == "" {
		call = r.Header.Get("Labrun-Call")
	}
	attempt, _ := strconv.Atoi(q.Get("attempt"))
	j := &fifoJob{Execution: Execution{Call: call, Attempt: attempt, Received: time.Now()}, ctx: r.Context(), done: make(chan struct{})}
	d.mu.Lock()
	d.stats.Received++
	if call == "" || len(d.calls) >= maxFIFOCalls {
		d.stats.Calls++
	} else if !d.calls[call] {
		d.calls[call] = true
		d.stats.Calls++
	}
	if d.record {
		d.arrivals = append(d.arrivals, j.Execution)
	}
	d.stats.Queued++
	d.mu.Unlock()
	select {
	case d.queue <- j:
	default:
		d.mu.Lock()
		d.stats.Queued--
		d.mu.Unlock()
		http.Error(w, "queue full", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-j.done:
	case <-d.stop:
		return
	}
	if d.failing != nil && d.failing(call) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Stats returns what the FIFO counted so far.
func (d *FIFO) Stats() FIFOStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	if s.Calls > 0 {
		s.Amplification = float64(s.Received) / float64(s.Calls)
	}
	now := time.Now()
	s.Paused = !now.Before(d.from) && now.Before(d.until)
	return s
}

func (d *FIFO) serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d.Stats())
}

// maxFIFOPause bounds a pause asked over HTTP.
const maxFIFOPause = time.Minute

// servePause pauses the FIFO now for the duration in "for" (POST /pause?for=500ms).
func (d *FIFO) servePause(w http.ResponseWriter, r *http.Request) {
	p, err := time.ParseDuration(r.URL.Query().Get("for"))
	if err != nil || p <= 0 || p > maxFIFOPause {
		http.Error(w, "want for=DURATION, above 0 and at most 1m", http.StatusBadRequest)
		return
	}
	now := time.Now()
	d.Pause(now, now.Add(p))
	w.WriteHeader(http.StatusNoContent)
}

// Received returns the requests received so far, executed or not (with Record).
func (d *FIFO) Received() []Execution {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Execution(nil), d.arrivals...)
}

// Executions returns the requests executed so far (with Record).
func (d *FIFO) Executions() []Execution {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Execution(nil), d.done...)
}

// Shutdown waits for the requests in flight until ctx ends, then Closes.
func (d *FIFO) Shutdown(ctx context.Context) error {
	err := d.srv.Shutdown(ctx)
	d.Close()
	return err
}

// Close drops the queued work and stops the server and its workers.
func (d *FIFO) Close() {
	select {
	case <-d.stop:
		return
	default:
	}
	close(d.stop)
	_ = d.srv.Close()
	d.wg.Wait()
}
