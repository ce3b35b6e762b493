package grpcsrv

import (
	"cmp"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labrun/labrun/internal/boundlog"
	"github.com/labrun/labrun/internal/fakesrv/guard"
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
	// Pings counts the clients' PING frames (not acks); TooManyPings the GOAWAYs
	// ENHANCE_YOUR_CALM "too_many_pings" the keepalive policy sent (WithKeepaliveEnforcement).
	Pings        int `json:"pings"`
	TooManyPings int `json:"goaways_too_many_pings"`
	// Executions counts handlers that did their work, by call ("-": none).
	Executions    map[string]int `json:"executions"`
	RSTFromClient map[string]int `json:"rst_from_client"`
	RSTFromServer map[string]int `json:"rst_from_server"`
	// Calls are the most recent streams within the log's bounds, in arrival order.
	Calls        []Call `json:"calls"`
	DroppedCalls int    `json:"dropped_calls"`
	// ForgottenIDs counts the call ids no longer counted: past the log limit, the oldest half go.
	ForgottenIDs int `json:"forgotten_ids"`
}

// The bounds of the server's records: a call's id, the other strings a record keeps, and a
// record's /stats JSON besides its strings.
const (
	MaxCallLen = 128
	maxField   = 256
	callCost   = 800
)

// DefaultLogBytes bounds the log of calls, each counted as its /stats JSON at most (WithLogBytes).
const DefaultLogBytes = 8 << 20

type ledger struct {
	limit int // calls kept, and ids counted

	mu        sync.Mutex // guards the fields below and every *Call
	st        Stats
	log       *boundlog.Log[*Call]
	ids       map[string]*idCount
	idOrder   []string // ids by first arrival, to forget the oldest
	forgotten int
	httpSrv   *http.Server
	httpLn    *connListener
}

// idCount is what the server counts of one call id: streams (refuse=, goaway=), handler runs
// (ok-on=), executions.
type idCount struct{ streams, attempts, executions int }

func newLedger(limit, bytes int) *ledger {
	l := &ledger{limit: limit, log: boundlog.New[*Call](limit, bytes)}
	l.reset()
	l.httpLn = newConnListener()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		if err := guard.Host(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(l.snapshot())
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, r *http.Request) {
		if err := guard.Change(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		l.reset()
		w.WriteHeader(http.StatusNoContent)
	})
	l.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: prefaceTimeout, ReadTimeout: prefaceTimeout,
		WriteTimeout: time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: log.New(io.Discard, "", 0)}
	go l.httpSrv.Serve(l.httpLn)
	return l
}

// reset forgets every record but the open connections.
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := l.st.ConnectionsOpen
	l.st = Stats{ConnectionsOpen: open, RSTFromClient: map[string]int{}, RSTFromServer: map[string]int{}}
	l.log.Reset()
	l.ids, l.idOrder, l.forgotten = map[string]*idCount{}, nil, 0
}

func (l *ledger) snapshot() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	st.Executions = map[string]int{}
	for id, n := range l.ids {
		if n.executions > 0 {
			st.Executions[cmp.Or(id, "-")] = n.executions
		}
	}
	st.RSTFromClient = maps.Clone(l.st.RSTFromClient)
	st.RSTFromServer = maps.Clone(l.st.RSTFromServer)
	st.DroppedCalls, st.ForgottenIDs = l.log.Dropped(), l.forgotten
	n, _ := l.log.Len()
	st.Calls = make([]Call, 0, n)
	l.log.Each(func(c *Call) bool {
		cc := *c
		cc.CtxEndMs, cc.ExecutedMs, cc.DoneMs = msSince(c.Arrived, c.CtxEnd), msSince(c.Arrived, c.ExecutedAt), msSince(c.Arrived, c.Done)
		st.Calls = append(st.Calls, cc)
		return true
	})
	return st
}

// sizes returns the calls kept, their bytes as counted, and the ids counted.
func (l *ledger) sizes() (calls, bytes, ids int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls, bytes = l.log.Len()
	return calls, bytes, len(l.ids)
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

// count returns id's counts, under l.mu; past limit ids, the oldest half are forgotten.
func (l *ledger) count(id string) *idCount {
	if n, ok := l.ids[id]; ok {
		return n
	}
	if l.limit > 0 && len(l.ids) >= l.limit {
		drop := len(l.idOrder) - l.limit/2
		for _, old := range l.idOrder[:drop] {
			delete(l.ids, old)
		}
		l.idOrder = append(l.idOrder[:0:0], l.idOrder[drop:]...)
		l.forgotten += drop
	}
	n := &idCount{}
	l.ids[id] = n
	l.idOrder = append(l.idOrder, id)
	return n
}

// streamSeen counts a stream of call id, returning its number from 1.
func (l *ledger) streamSeen(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.count(id)
	n.streams++
	return n.streams
}

// attempt counts a handler run of call id, returning its number from 1.
func (l *ledger) attempt(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.count(id)
	n.attempts++
	return n.attempts
}

// newCall records a stream; its strings are cut to their bounds (clip).
func (l *ledger) newCall(method, id, fault, timeout string, conn int, stream uint32) *Call {
	c := &Call{Method: clip(method, maxField), ID: clip(id, MaxCallLen), Fault: clip(fault, maxField), Timeout: clip(timeout, maxField),
		Conn: conn, Stream: stream, Arrived: time.Now()}
	if d, ok := decodeTimeout(timeout); ok {
		v := float64(d.Microseconds()) / 1000
		c.TimeoutMs = &v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Streams++
	l.log.Add(c, callCost+2*(len(c.Method)+len(c.ID)+len(c.Fault)+len(c.Timeout)))
	return c
}

// clip returns s as valid UTF-8 of at most n bytes, ending in "…" when it was cut.
func clip(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	if len(s) > n {
		return strings.ToValidUTF8(s[:n-len("…")], "?") + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// find returns a stream's call, nil when no longer kept.
func (l *ledger) find(conn int, stream uint32) *Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found *Call
	l.log.Backward(func(c *Call) bool {
		if c.Conn == conn && c.Stream == stream {
			found = c
		}
		return found == nil
	})
	return found
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
	l.count(c.ID).executions++
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

func (l *ledger) ping() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Pings++
}

func (l *ledger) tooManyPings() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.TooManyPings++
}
