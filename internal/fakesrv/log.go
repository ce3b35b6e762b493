package fakesrv

import (
	"sync"
	"time"

	"github.com/labrun/labrun/internal/boundlog"
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
	// Failed is the Behaviour.Fail or the body cut (close, reset) carried out, "" for none.
	Failed string
	// SeedNo numbers a seeded request under its Behaviour.Seed (1, 2, ...), 0 for none;
	// Drawn is its delay drawn from Behaviour.DelayDist.
	SeedNo int
	Drawn  time.Duration
	// Fault is the text of the proxy's fault rule the request matched (WithUpstream), "" for none.
	Fault string
	// Forwarded: a proxy sent the request upstream; Upstream is the upstream's status, 0 if
	// none came, and UpstreamAt when its head came.
	Forwarded  bool
	Upstream   int
	UpstreamAt time.Time
}

// entryOverhead is what a log entry costs besides its path.
const entryOverhead = 256

// entrySize counts a log entry's path twice: its order id comes from the path.
func entrySize(path string) int {
	return entryOverhead + 2*len(path)
}

// requestLog is the log of requests and the count per endpoint.
type requestLog struct {
	mu          sync.Mutex // guards entries, seq and perEndpoint
	entries     *boundlog.Log[*Request]
	seq         int
	perEndpoint map[string]int
}

// newRequestLog keeps at most limit entries and byteLimit bytes (entrySize; 0: no bound).
func newRequestLog(limit, byteLimit int) *requestLog {
	return &requestLog{entries: boundlog.New[*Request](limit, byteLimit), perEndpoint: make(map[string]int)}
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
	l.entries.Add(entry, entrySize(entry.Path))
	return entry
}

func (l *requestLog) publish(entry *Request, rec *Request) {
	l.mu.Lock()
	*entry = *rec
	l.mu.Unlock()
}

func (l *requestLog) snapshot() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := l.entries.Len()
	out := make([]Request, 0, n)
	l.entries.Each(func(r *Request) bool { out = append(out, *r); return true })
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
	return out, l.entries.Dropped()
}

func (l *requestLog) size() (entries, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entries.Len()
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries.Reset()
	l.seq = 0
	l.perEndpoint = make(map[string]int)
}
