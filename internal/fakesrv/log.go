package fakesrv

import (
	"sync"
	"time"
)

// Request is what the server saw of one request, in the server's clock readings.
type Request struct {
	// Seq is the 1-based arrival number since start or the last Reset.
	Seq    int
	Method string
	Path   string
	// BodyBytes counts the request body bytes read before answering.
	BodyBytes int
	Proto     string
	// Endpoint names the endpoint the path selected, or other.
	Endpoint string
	// Behaviour is what the request asked for; zero for an invalid query.
	Behaviour Behaviour
	Arrived   time.Time
	// HeadSent is when the head was flushed; zero if never.
	HeadSent time.Time
	// Finished is when the handler ended; zero while in progress.
	Finished time.Time
	// BytesSent counts the body bytes written and flushed.
	BytesSent int
	// Reserved: the request committed a reservation; Duplicate: it repeated an idempotent one.
	Reserved  bool
	Duplicate bool
	// ClientGone: the client left before the response was complete (not the server's Close).
	ClientGone bool
	// Status is the status sent, 0 if none.
	Status int
	// Budget is the client's X-Deadline-Ms, -1 without one.
	Budget time.Duration
	// Rejected: answered 503 at once, Budget being shorter than Delay.
	Rejected bool
	// Conn numbers the request's connection in accept order, ConnSeq the request on it (an
	// HTTP/2 stream counts); both 0 under another server (Handler).
	Conn, ConnSeq int
	// Failed is the Behaviour.Fail carried out, "" for none.
	Failed string
}

// entryOverhead is what a log entry costs besides its path.
const entryOverhead = 256

// entrySize counts a log entry's path twice: its order id comes from the path.
func entrySize(path string) int {
	return entryOverhead + 2*len(path)
}

// requestLog is the log of requests and the count per endpoint.
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

func newRequestLog(limit, byteLimit int) *requestLog {
	return &requestLog{limit: limit, byteLimit: byteLimit, perEndpoint: make(map[string]int)}
}

// arrive numbers rec, counts it and appends a copy, the request's slot that publish updates.
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

// trim makes room for size bytes, dropping the oldest entries to half of each bound at once:
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

func (l *requestLog) publish(entry *Request, rec *Request) {
	l.mu.Lock()
	*entry = *rec
	l.mu.Unlock()
}

func (l *requestLog) snapshot() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Request, len(l.entries))
	for i, r := range l.entries {
		out[i] = *r
	}
	return out
}

// counts returns the requests per endpoint (every name present) and the entries dropped.
func (l *requestLog) counts(names []string) (perEndpoint map[string]int, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = l.perEndpoint[name]
	}
	return out, l.dropped
}

func (l *requestLog) size() (entries, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), l.bytes
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
	l.bytes = 0
	l.dropped = 0
	l.seq = 0
	l.perEndpoint = make(map[string]int)
}
