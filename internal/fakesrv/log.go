package fakesrv

import (
	"sync"
	"time"
)

// Request is what the server saw of one request. Times are the server's own clock readings
// (with their monotonic part, so differences between them are exact).
type Request struct {
	// Seq is the 1-based arrival number since the server started or the last Reset.
	Seq int
	// Method is the request's method, as received.
	Method string
	// Path is the request path and query as received.
	Path string
	// BodyBytes counts the request body bytes the server read (for an endpoint that reads
	// the body itself, those it read before answering).
	BodyBytes int
	// Proto is the protocol of the request, "HTTP/1.1" or "HTTP/2.0".
	Proto string
	// Endpoint names the endpoint the path selected: reserve, trickle, stall, delay, status,
	// redirect, redirect-loop, close-after-read, reset, stats or other (no such endpoint).
	Endpoint string
	// Behaviour is what the request asked for: zero when its query was invalid, and for the
	// endpoints other than reserve, trickle, stall and delay except for a status delay.
	Behaviour Behaviour
	// Arrived is when the handler started.
	Arrived time.Time
	// HeadSent is when the response head was flushed; zero if it never was.
	HeadSent time.Time
	// Finished is when the handler ended; zero while the request is in progress.
	Finished time.Time
	// BytesSent counts the body bytes successfully written and flushed.
	BytesSent int
	// Reserved is true when this request committed a reservation (false for an idempotent
	// duplicate).
	Reserved bool
	// Duplicate is true for an idempotent repeat of an earlier reservation of the same order.
	Duplicate bool
	// ClientGone is true when the client went away before the response was complete. It
	// stays false when the server's own Close cut the response short.
	ClientGone bool
	// Status is the final status code sent, 0 if none (also for close-after-read and
	// reset, which never answer).
	Status int
	// Budget is the client's remaining time from its X-Deadline-Ms header, -1 without one.
	Budget time.Duration
	// Rejected is true when the server answered 503 at once because Budget was shorter than
	// the work asked for (Delay), without reserving.
	Rejected bool
	// Conn is the 1-based number of the connection the request came on, in the order the
	// server accepted them since it started; ConnSeq is the request's 1-based number on that
	// connection (an HTTP/2 stream counts as a request). Both are 0 when the handler runs
	// under another server (Handler), which does not number connections.
	Conn, ConnSeq int
	// Failed says how the server failed the request on purpose (Behaviour.Fail): "close" or
	// "reset" after reading it, "" when it did not.
	Failed string
}

// entryOverhead is what a log entry costs besides its path: the Request itself, its
// pointer and its share of the slice, rounded up.
const entryOverhead = 256

// entrySize is the bytes a log entry for path is counted for: the path, and as much again
// for the order id, which comes from the path's query and so is never longer.
func entrySize(path string) int {
	return entryOverhead + 2*len(path)
}

// requestLog is the server's log of requests and its count of requests per endpoint.
type requestLog struct {
	limit     int // entries kept, 0 for all; set once by New
	byteLimit int // bytes kept (entrySize), 0 for all; set once by New

	mu          sync.Mutex // guards entries, bytes, dropped, seq and perEndpoint
	entries     []*Request
	bytes       int // the sum of entrySize over entries
	dropped     int // entries dropped to respect limit and byteLimit
	seq         int
	perEndpoint map[string]int
}

// newRequestLog returns an empty log keeping at most limit entries and byteLimit bytes
// (0: no bound).
func newRequestLog(limit, byteLimit int) *requestLog {
	return &requestLog{limit: limit, byteLimit: byteLimit, perEndpoint: make(map[string]int)}
}

// arrive numbers rec, counts it for its endpoint and appends a copy of it to the log; the
// copy is the request's log slot, which publish updates.
func (l *requestLog) arrive(rec *Request) *Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	rec.Seq = l.seq
	l.perEndpoint[rec.Endpoint]++
	entry := new(Request)
	*entry = *rec
	size := entrySize(entry.Path)
	l.trim(size)
	l.entries = append(l.entries, entry)
	l.bytes += size
	return entry
}

// trim makes room for an entry of size bytes. When a bound would be passed, it drops the
// oldest entries down to half of each bound at once rather than one entry per request:
// amortised O(1).
func (l *requestLog) trim(size int) {
	overCount := l.limit > 0 && len(l.entries) >= l.limit
	overBytes := l.byteLimit > 0 && l.bytes+size > l.byteLimit
	if !overCount && !overBytes {
		return
	}
	n := 0
	for n < len(l.entries) &&
		((l.limit > 0 && len(l.entries)-n > l.limit/2) || (l.byteLimit > 0 && l.bytes+size > l.byteLimit/2)) {
		l.bytes -= entrySize(l.entries[n].Path)
		n++
	}
	kept := copy(l.entries, l.entries[n:])
	clear(l.entries[kept:]) // no stale pointer keeps a dropped entry alive
	l.entries = l.entries[:kept]
	l.dropped += n
}

// publish copies rec to its log slot, so that Requests shows a request's progress.
func (l *requestLog) publish(entry *Request, rec *Request) {
	l.mu.Lock()
	*entry = *rec
	l.mu.Unlock()
}

// snapshot returns a copy of the entries, in arrival order.
func (l *requestLog) snapshot() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Request, len(l.entries))
	for i, r := range l.entries {
		out[i] = *r
	}
	return out
}

// counts returns the requests per endpoint name, every name of names present, and the
// entries dropped.
func (l *requestLog) counts(names []string) (perEndpoint map[string]int, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = l.perEndpoint[name]
	}
	return out, l.dropped
}

// size returns the entries kept and the bytes they are counted for.
func (l *requestLog) size() (entries, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), l.bytes
}

// reset empties the log and zeroes the numbering and the counts.
func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
	l.bytes = 0
	l.dropped = 0
	l.seq = 0
	l.perEndpoint = make(map[string]int)
}
