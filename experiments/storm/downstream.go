package storm

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// downstream is a loopback server of fixed capacity: workers take requests in FIFO order,
// each for service, none while paused, and cannot see that a caller left. A failing call's
// requests are answered 503 after their work.
type downstream struct {
	URL      string
	srv      *http.Server
	ln       net.Listener
	queue    chan *job
	service  time.Duration
	failing  func(call int) bool
	stop     chan struct{}
	wg       sync.WaitGroup
	pauseMu  sync.Mutex // guards from and until
	from     time.Time
	until    time.Time
	recordMu sync.Mutex // guards records and arrivals
	records  []execution
	arrivals []execution
}

// execution is one request the downstream received and executed.
type execution struct {
	call, attempt        int
	received, start, end time.Time
	// cost runs from the worker's previous end when the request waited (0 otherwise).
	cost time.Duration
}

type job struct {
	execution
	done chan struct{}
}

// maxQueue bounds the downstream's queue; an experiment's storm stays far below it.
const maxQueue = 1 << 16

func newDownstream(workers int, service time.Duration, failing func(int) bool) (*downstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &downstream{URL: "http://" + ln.Addr().String(), ln: ln, queue: make(chan *job, maxQueue), service: service,
		failing: failing, stop: make(chan struct{})}
	d.srv = &http.Server{Handler: http.HandlerFunc(d.serve), ReadHeaderTimeout: 10 * time.Second}
	for range workers {
		d.wg.Add(1)
		go d.work()
	}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

// pause makes the downstream start no work from from until until.
func (d *downstream) pause(from, until time.Time) {
	d.pauseMu.Lock()
	d.from, d.until = from, until
	d.pauseMu.Unlock()
}

func (d *downstream) work() {
	defer d.wg.Done()
	var prevEnd time.Time
	for {
		var j *job
		select {
		case j = <-d.queue:
		case <-d.stop:
			return
		}
		d.pauseMu.Lock()
		from, until := d.from, d.until
		d.pauseMu.Unlock()
		if now := time.Now(); !now.Before(from) && now.Before(until) {
			clock.SleepUntil(context.Background(), until)
		}
		j.start = time.Now()
		clock.SleepUntil(context.Background(), j.start.Add(d.service))
		j.end = time.Now()
		if j.received.Before(prevEnd) && j.start.Sub(prevEnd) < d.service {
			j.cost = j.end.Sub(prevEnd)
		}
		prevEnd = j.end
		d.recordMu.Lock()
		d.records = append(d.records, j.execution)
		d.recordMu.Unlock()
		close(j.done)
	}
}

// serve queues the request and answers once its work is done, whether its caller is still
// there or not.
func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	call, _ := strconv.Atoi(q.Get("call"))
	attempt, _ := strconv.Atoi(q.Get("attempt"))
	j := &job{execution: execution{call: call, attempt: attempt, received: time.Now()}, done: make(chan struct{})}
	d.recordMu.Lock()
	d.arrivals = append(d.arrivals, j.execution)
	d.recordMu.Unlock()
	select {
	case d.queue <- j:
	default:
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

// received returns the requests the downstream received so far, executed or not.
func (d *downstream) received() []execution {
	d.recordMu.Lock()
	defer d.recordMu.Unlock()
	return append([]execution(nil), d.arrivals...)
}

// executions returns what the downstream executed so far.
func (d *downstream) executions() []execution {
	d.recordMu.Lock()
	defer d.recordMu.Unlock()
	return append([]execution(nil), d.records...)
}

// Close stops the server and its workers; queued work is dropped.
func (d *downstream) Close() {
	close(d.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	_ = d.srv.Close()
	d.wg.Wait()
}
