package h2node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/guard"
)

// The control server's timeouts: a slow or idle client does not hold it.
const (
	controlReadTimeout  = 5 * time.Second
	controlWriteTimeout = 10 * time.Second
	controlIdleTimeout  = 10 * time.Second
)

// Cluster is nodes on one port, one per address (labrun serve --h2, --h2c), with a control
// server (Handler). Stop it with Shutdown or Close. Safe for concurrent use.
type Cluster struct {
	Nodes []*Node
	// ControlURL is "http://127.0.0.1:PORT".
	ControlURL string

	ctl  *http.Server
	once sync.Once

	mu     sync.Mutex // guards frozen and orders Freeze and Thaw
	frozen []bool
}

// NewCluster starts a node on each of ips with opts[i], all on port ("0": one free on every
// address), and the control server.
func NewCluster(ips []netip.Addr, port string, opts [][]Option) (*Cluster, error) {
	if len(ips) == 0 || len(opts) != len(ips) {
		return nil, fmt.Errorf("h2node: a cluster needs one option list per address, got %d addresses and %d lists", len(ips), len(opts))
	}
	c := &Cluster{frozen: make([]bool, len(ips))}
	if err := c.startNodes(ips, port, opts); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ips[0].String(), "0"))
	if err != nil {
		c.closeNodes()
		return nil, fmt.Errorf("h2node: cannot listen for the control server: %w", err)
	}
	c.ControlURL = "http://" + ln.Addr().String()
	c.ctl = &http.Server{
		Handler:           c.Handler(),
		ReadHeaderTimeout: controlReadTimeout,
		ReadTimeout:       controlReadTimeout,
		WriteTimeout:      controlWriteTimeout,
		IdleTimeout:       controlIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go c.ctl.Serve(ln)
	return c, nil
}

func (c *Cluster) startNodes(ips []netip.Addr, port string, opts [][]Option) error {
	var err error
	for range 5 {
		p := port
		for i, ip := range ips {
			var n *Node
			n, err = New(append(opts[i], WithAddr(net.JoinHostPort(ip.String(), p)))...)
			if err != nil {
				break
			}
			c.Nodes = append(c.Nodes, n)
			_, p, _ = net.SplitHostPort(n.Addr)
		}
		if err == nil {
			return nil
		}
		c.closeNodes()
		c.Nodes = nil
		if port != "0" {
			break
		}
	}
	return fmt.Errorf("cannot start the nodes: %w", err)
}

func (c *Cluster) closeNodes() {
	for _, n := range c.Nodes {
		n.Close()
	}
}

// Close stops the control server and every node, ending streams in flight unanswered.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		c.ctl.Close()
		c.closeNodes()
	})
	return nil
}

// Shutdown waits until no stream is in flight, or ctx is done (then returning its error), and
// closes the cluster.
func (c *Cluster) Shutdown(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for c.InFlight() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	c.Close()
	return err
}

// InFlight returns the streams in flight on all nodes.
func (c *Cluster) InFlight() int {
	total := 0
	for _, n := range c.Nodes {
		total += n.Stats().InFlight
	}
	return total
}

// Freeze freezes node i (from 0), or every node for i < 0.
func (c *Cluster) Freeze(i int) { c.setFrozen(i, true) }

// Thaw ends a Freeze of node i, or of every node for i < 0.
func (c *Cluster) Thaw(i int) { c.setFrozen(i, false) }

func (c *Cluster) setFrozen(which int, freeze bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.Nodes {
		if which >= 0 && i != which {
			continue
		}
		if freeze {
			n.Freeze()
		} else {
			n.Thaw()
		}
		c.frozen[i] = freeze
	}
}

// NodeStats is one node in the control server's GET /stats.
type NodeStats struct {
	Node                     int         `json:"node"`
	URL                      string      `json:"url"`
	Frozen                   bool        `json:"frozen"`
	Connections              int         `json:"connections"`
	StreamsPerConnection     []int       `json:"streams_per_connection"`
	MaxInFlightPerConnection []int       `json:"max_in_flight_per_connection"`
	Requests                 int         `json:"requests"`
	Statuses                 map[int]int `json:"statuses"`
	Refused                  int         `json:"refused"`
	Cancelled                int         `json:"cancelled"`
	InFlight                 int         `json:"in_flight"`
	MaxInFlight              int         `json:"max_in_flight"`
}

// Stats returns every node's counters, in Nodes' order.
func (c *Cluster) Stats() []NodeStats {
	c.mu.Lock()
	frozen := append([]bool(nil), c.frozen...)
	c.mu.Unlock()
	out := []NodeStats{}
	for i, n := range c.Nodes {
		st := n.Stats()
		out = append(out, NodeStats{
			Node: i + 1, URL: n.URL, Frozen: frozen[i], Connections: st.Conns,
			StreamsPerConnection: orEmpty(st.Streams), MaxInFlightPerConnection: orEmpty(st.MaxStreamsPerConn),
			Requests: st.Requests, Statuses: st.Statuses, Refused: st.Refused, Cancelled: st.Cancelled,
			InFlight: st.InFlight, MaxInFlight: st.MaxInFlight,
		})
	}
	return out
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// Handler returns the control API (docs/serve.md): GET /stats, POST /freeze?node=N, POST
// /thaw?node=N (N from 1; none: all), for requests to its own address or localhost only.
func (c *Cluster) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		if err := guard.Host(r); err != nil {
			http.Error(w, "labrun: "+err.Error(), http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": c.Stats()})
	})
	for path, freeze := range map[string]bool{"/freeze": true, "/thaw": false} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			if err := guard.Change(r); err != nil {
				http.Error(w, "labrun: "+err.Error(), http.StatusForbidden)
				return
			}
			which, err := c.pick(r.URL.Query().Get("node"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.setFrozen(which, freeze)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "labrun: GET /stats, POST /freeze?node=N, POST /thaw?node=N (no node: all)", http.StatusNotFound)
	})
	return mux
}

func (c *Cluster) pick(node string) (int, error) {
	if node == "" {
		return -1, nil
	}
	k, err := strconv.Atoi(node)
	if err != nil || k < 1 || k > len(c.Nodes) {
		return 0, fmt.Errorf("labrun: node must be a number from 1 to %d, got %q", len(c.Nodes), node)
	}
	return k - 1, nil
}
