package grpcsrv

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"
)

// Call is what the server saw of one stream; times are offsets from Arrived.
type Call struct {
	// Method is the :path ("/labrun.Fault/Call"); ID is the labrun-call metadata.
	Method string `json:"method"`
	ID     string `json:"call"`
	Fault  string `json:"fault"`
	// Timeout is grpc-timeout as written ("" when none), TimeoutMs its value.
	Timeout   string   `json:"grpc_timeout"`
	TimeoutMs *float64 `json:"grpc_timeout_ms"`
	// Conn (from 1) and Stream are where the call came.
	Conn   int    `json:"conn"`
	Stream uint32 `json:"stream"`
	// Front is what the front did instead of passing the stream ("refused", "GOAWAY").
	Front string `json:"front,omitempty"`
	// RSTFromClient and RSTFromServer are the RST_STREAM codes that ended the stream.
	RSTFromClient string `json:"rst_from_client,omitempty"`
	RSTFromServer string `json:"rst_from_server,omitempty"`
	// CtxEndMs is when the handler's context ended before it returned; CtxErr how.
	CtxEndMs *float64 `json:"ctx_end_ms"`
	CtxErr   string   `json:"ctx_err,omitempty"`
	// Executed: the handler did its work to the end (charged).
	Executed   bool     `json:"executed"`
	ExecutedMs *float64 `json:"executed_ms"`
	Messages   int      `json:"messages"`
	// Code is the status returned; empty while running.
	Code   string   `json:"code,omitempty"`
	DoneMs *float64 `json:"done_ms"`
	// Next is a chain hop's downstream result.
	Next string `json:"next,omitempty"`

	Arrived time.Time `json:"-"`
	// CtxEnd, ExecutedAt and Done are those times as instants.
	CtxEnd     time.Time `json:"-"`
	ExecutedAt time.Time `json:"-"`
	Done       time.Time `json:"-"`
}

// Stats is what /stats reports and Server.Stats returns.
type Stats struct {
	Connections     int `json:"connections_accepted"`
	ConnectionsOpen int `json:"connections_open"`
	Streams         int `json:"streams"`
	Refused         int `json:"refused_streams"`
	GoAways         int `json:"goaways"`
	// Executions counts handlers that did their work, by call ("-": none).
	Executions    map[string]int `json:"executions"`
	RSTFromClient map[string]int `json:"rst_from_client"`
	RSTFromServer map[string]int `json:"rst_from_server"`
	// Calls are the most recent LogLimit streams, in arrival order.
	Calls        []Call `json:"calls"`
	DroppedCalls int    `json:"dropped_calls"`
}

type ledger struct {
	limit int

	mu       sync.Mutex // guards the fields below and every *Call
	st       Stats
	calls    []*Call
	seen     map[string]int // streams by call id (refuse=, goaway=)
	attempts map[string]int // handler runs by call id (ok-on=)
	httpSrv  *http.Server
	httpLn   *connListener
}

func newLedger(limit int) *ledger {
	l := &ledger{limit: limit}
	l.reset()
	l.httpLn = newConnListener()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(l.snapshot())
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, r *http.Request) {
		l.reset()
		w.WriteHeader(http.StatusNoContent)
	})
	l.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go l.httpSrv.Serve(l.httpLn)
	return l
}

// reset forgets every record but the open connections.
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := l.st.ConnectionsOpen
	l.st = Stats{ConnectionsOpen: open, Executions: map[string]int{}, RSTFromClient: map[string]int{}, RSTFromServer: map[string]int{}}
	l.calls = nil
	l.seen = map[string]int{}
	l.attempts = map[string]int{}
}

func (l *ledger) snapshot() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	st.Executions = copyMap(l.st.Executions)
	st.RSTFromClient = copyMap(l.st.RSTFromClient)
	st.RSTFromServer = copyMap(l.st.RSTFromServer)
	st.Calls = make([]Call, len(l.calls))
	for i, c := range l.calls {
		st.Calls[i] = *c
		st.Calls[i].CtxEndMs = msSince(c.Arrived, c.CtxEnd)
		st.Calls[i].ExecutedMs = msSince(c.Arrived, c.ExecutedAt)
		st.Calls[i].DoneMs = msSince(c.Arrived, c.Done)
	}
	return st
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func msSince(from, t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	v := float64(t.Sub(from).Microseconds()) / 1000
	return &v
}

func (l *ledger) connOpened() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Connections++
	l.st.ConnectionsOpen++
	return l.st.Connections
}

func (l *ledger) connClosed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.ConnectionsOpen--
}

// streamSeen counts a stream of call id, returning its number from 1.
func (l *ledger) streamSeen(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[id]++
	return l.seen[id]
}

// attempt counts a handler run of call id, returning its number from 1.
func (l *ledger) attempt(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[id]++
	return l.attempts[id]
}

func (l *ledger) newCall(method, id, fault, timeout string, conn int, stream uint32) *Call {
	c := &Call{Method: method, ID: id, Fault: fault, Timeout: timeout, Conn: conn, Stream: stream, Arrived: time.Now()}
	if d, ok := decodeTimeout(timeout); ok {
		v := float64(d.Microseconds()) / 1000
		c.TimeoutMs = &v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Streams++
	l.calls = append(l.calls, c)
	if over := len(l.calls) - l.limit; l.limit > 0 && over > 0 {
		l.calls = append(l.calls[:0:0], l.calls[over:]...)
		l.st.DroppedCalls += over
	}
	return c
}

// find returns a stream's call, nil when no longer kept.
func (l *ledger) find(conn int, stream uint32) *Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.calls) - 1; i >= 0; i-- {
		if c := l.calls[i]; c.Conn == conn && c.Stream == stream {
			return c
		}
	}
	return nil
}

// note changes a call under the lock; nil is skipped.
func (l *ledger) note(c *Call, f func(*Call)) {
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f(c)
}

func (l *ledger) refused(c *Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Refused++
	c.Front = "refused (RST_STREAM REFUSED_STREAM)"
}

func (l *ledger) goAway(c *Call, last uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.GoAways++
	c.Front = "GOAWAY, last stream " + itoa(int(last))
}

func (l *ledger) rst(c *Call, code string, fromClient bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fromClient {
		l.st.RSTFromClient[code]++
	} else {
		l.st.RSTFromServer[code]++
	}
	if c == nil {
		return
	}
	if fromClient {
		c.RSTFromClient = code
	} else {
		c.RSTFromServer = code
	}
}

func (l *ledger) executed(c *Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := c.ID
	if id == "" {
		id = "-"
	}
	l.st.Executions[id]++
	c.Executed, c.ExecutedAt = true, time.Now()
}

func (l *ledger) serveHTTP(c net.Conn) {
	select {
	case l.httpLn.conns <- c:
	case <-l.httpLn.closed:
		c.Close()
	}
}

func (l *ledger) close() {
	l.httpLn.Close()
	l.httpSrv.Close()
}

// connListener is a listener the front feeds (grpc-go's pipes; /stats connections).
type connListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnListener() *connListener {
	return &connListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *connListener) Addr() net.Addr { return pipeAddr{} }
