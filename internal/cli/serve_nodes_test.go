package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv/h2node"
)

// h2cClient is net/http's HTTP/2 client over h2c, strict (streams wait for a slot rather than
// dial) and bounded by timeout.
func h2cClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols), HTTP2: &http.HTTP2Config{StrictMaxConcurrentRequests: true}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

// nodesStats reads labrun serve --h2c's /stats.
func nodesStats(t *testing.T, url string) []h2node.NodeStats {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Nodes []h2node.NodeStats `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Nodes
}

// TestServeH2c: three nodes on 127.0.0.1 to .3, one port; two streams on one connection
// show in /stats; a frozen node answers nothing until it is thawed.
func TestServeH2c(t *testing.T) {
	s := startServe(t, "--h2c", "--nodes", "3", "--max-concurrent-streams", "2", "--latency", "50ms", "--throttle")
	lines := strings.Split(s.url, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "http://127.0.0.1:") || !strings.HasSuffix(lines[3], "/stats") {
		t.Fatalf("got stdout %q, want 3 node URLs and the /stats URL", s.url)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(lines[0], "http://"))
	if lines[2] != "http://127.0.0.3:"+port {
		t.Errorf("node 3 at %s, want 127.0.0.3 on node 1's port %s", lines[2], port)
	}
	stats := lines[3]
	c := h2cClient(t, 5*time.Second)
	get := func(c *http.Client, url string) (int, error) {
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	// One call opens the connection (two at once would each dial one: net/http's herd),
	// then two share it.
	if code, err := get(c, lines[0]+"/3/device/x"); code != 200 {
		t.Fatalf("node 1: got %d (%v), want 200", code, err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code, err := get(c, lines[0]+"/3/device/x"); code != 200 {
				t.Errorf("node 1: got %d (%v), want 200", code, err)
			}
		})
	}
	wg.Wait()
	if n := nodesStats(t, stats)[0]; n.Connections != 1 || !slices.Equal(n.StreamsPerConnection, []int{3}) || n.MaxInFlight != 2 || n.Statuses[200] != 3 {
		t.Errorf("node 1's stats: %+v, want 1 connection carrying 3 streams, 2 at once", n)
	}
	post := func(path string) int {
		resp, err := http.Post(strings.TrimSuffix(stats, "/stats")+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/freeze?node=2"); code != http.StatusNoContent {
		t.Fatalf("freeze: got %d, want 204", code)
	}
	if _, err := get(h2cClient(t, 300*time.Millisecond), lines[1]+"/"); err == nil {
		t.Error("a frozen node answered")
	}
	if n := nodesStats(t, stats)[1]; !n.Frozen {
		t.Errorf("node 2's stats: %+v, want frozen", n)
	}
	if code := post("/thaw?node=2"); code != http.StatusNoContent {
		t.Fatalf("thaw: got %d, want 204", code)
	}
	if code, err := get(c, lines[1]+"/"); code != 200 {
		t.Errorf("node 2 after the thaw: got %d (%v), want 200", code, err)
	}
	if code := post("/freeze?node=4"); code != http.StatusBadRequest {
		t.Errorf("freeze of node 4: got %d, want 400", code)
	}
	if code := s.wait(); code != exitPass {
		t.Errorf("got exit %d, want 0; stderr %q", code, s.stderr.String())
	}
}

// TestServeH2: over TLS the CA goes to a temporary file, printed on stderr and removed at
// the end; a client that trusts it speaks HTTP/2 to the node.
func TestServeH2(t *testing.T) {
	s := startServe(t, "--h2")
	stderr := s.stderr.String()
	_, after, ok := strings.Cut(stderr, "CA certificate: ")
	path, _, _ := strings.Cut(after, " ")
	if !ok || path == "" {
		t.Fatalf("stderr %q names no CA certificate", stderr)
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds %q, want a PEM certificate", path, pem)
	}
	tr := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{RootCAs: pool}}
	tr.Protocols.SetHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	node := strings.Split(s.url, "\n")[0]
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(node + "/3/device/x?status=400")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Proto != "HTTP/2.0" || string(body) != `{"reason":"BadDeviceToken"}` || !strings.HasPrefix(node, "https://") {
		t.Errorf("got %s %d %q from %s, want HTTP/2.0 400 BadDeviceToken over https", resp.Proto, resp.StatusCode, body, node)
	}
	if code := s.wait(); code != exitPass {
		t.Errorf("got exit %d, want 0", code)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary CA file %s is still there (%v)", path, err)
	}
}

// waitForNodes polls the nodes' /stats at url until cond holds, failing the test after 5 s.
func waitForNodes(t *testing.T, url string, cond func([]h2node.NodeStats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(nodesStats(t, url)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never satisfied the condition", url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
