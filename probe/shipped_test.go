package probe

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/noise"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The shipped probes are checked against the model by TestShippedProbes, which runs only when
// asked: it takes several minutes.
var (
	runShipped     = flag.Bool("shipped", false, "run TestShippedProbes: every probe of examples/probes against the model (make probes)")
	updateClients  = flag.Bool("update-clients", false, "with -shipped: rewrite docs/clients.md from the measurements (make clients)")
	shippedCapsArg = []string{"silent", "unreachable"} // the scenarios a client without timeouts hangs on: capped short
	// shippedScenarios narrows -shipped to some scenarios, docs/clients.md unchecked.
	shippedScenarios = flag.String("shipped-scenarios", "", "with -shipped: run only these scenarios (comma-separated), without checking docs/clients.md")
)

// shippedCap is the cap of the scenarios a client at its defaults hangs on, in CI: the model
// says "still running at the cap" for any limit past it, as it would for the default cap.
const shippedCap = 5 * time.Second

// shippedProbe is one probe of examples/probes in one configuration, with the client the
// model is expected to agree with and the rows where it does not, each a rule read in the
// library's source.
type shippedProbe struct {
	name    string   // the section of docs/clients.md
	needs   []string // programs and files that must exist
	args    func(root, tmp string) ([]string, error)
	env     []string
	expect  []string          // "PRESET", then flag=value pairs of predict's limit flags, "pool=N"
	known   map[string]string // scenario -> the library's rule that the model does not follow
	version func() string     // the library's version on this machine
	// tolerance replaces the gate's 50 ms where the client's timer starts before the server
	// can see the call (shippedJDKStart).
	tolerance time.Duration
	// preset names the model's profile of the library (predict --defaults NAME, probe
	// --expect NAME). A retry layer's probe judged by must alone until the model has its
	// preset has expect nil; CI judges it by the preset with one line:
	// expect: []string{preset, limits...}.
	preset string
	// only lists the scenarios run, where the library's waits would make a whole run too
	// long for make probes (a retry layer's defaults cost 20 s a failing scenario); caps
	// replaces their caps where a retried call outlives the default.
	only []string
	caps map[string]time.Duration
	// storm runs the storm besides every scenario, where only is empty.
	storm bool
	// must is what rows must show, each from the library's source: counts and the whole
	// call's time. It holds with or without expect.
	must map[string]must
}

// must is what one row of a shipped probe must show, from the library's source: nil or 0
// fields are not judged.
type must struct {
	outcome                     vocab.Outcome
	requests, executions, conns *int
	// call is the whole call's time as the probe reported it, within margin.
	call, margin time.Duration
	// rule is the library's rule the figures follow, with its source.
	rule string
}

func n(v int) *int { return &v }

// String says what w asks for: "5 requests, the call 20s ± 1s".
func (w must) String() string {
	var parts []string
	if w.outcome != "" {
		parts = append(parts, string(w.outcome))
	}
	for _, c := range []struct {
		n    *int
		word string
	}{{w.requests, "request"}, {w.executions, "execution"}, {w.conns, "connection"}} {
		if c.n != nil {
			parts = append(parts, plural(*c.n, c.word))
		}
	}
	if w.call > 0 {
		parts = append(parts, fmt.Sprintf("the call %v ± %v", w.call, w.margin))
	}
	return strings.Join(parts, ", ")
}

// mustFail lists how the observation of sc breaks w, or "".
func (w must) check(o observation, m measures) []string {
	var out []string
	count := func(what string, want *int, got int) {
		if want != nil && *want != got {
			out = append(out, fmt.Sprintf("%s %d, want %d", what, got, *want))
		}
	}
	if w.outcome != "" && m.outcome != w.outcome {
		out = append(out, fmt.Sprintf("outcome %s, want %s", m.outcome, w.outcome))
	}
	count("requests", w.requests, m.arrivals)
	count("executions", w.executions, m.executions)
	count("connections", w.conns, m.conns)
	if w.call > 0 {
		switch {
		case m.call == nil:
			out = append(out, "no call time reported, want "+w.call.String())
		case (*m.call - w.call).Abs() > w.margin:
			out = append(out, fmt.Sprintf("the call took %v, want %v ± %v", m.call.Round(time.Millisecond), w.call, w.margin))
		}
	}
	return out
}

// mustBreaches lists the scenarios of obs whose rows break sp.must, with why.
func mustBreaches(sp shippedProbe, obs []observation) map[string][]string {
	out := map[string][]string{}
	meas := measureAll(obs)
	for i, o := range obs {
		if w, ok := sp.must[o.sc.Name]; ok && o.skipped == "" {
			if why := w.check(o, meas[i]); len(why) > 0 {
				out[o.sc.Name] = why
			}
		}
	}
	return out
}

// shippedJDKStart is how early, seen from the server, the JDK HttpClient leaves at its request
// timeout: HttpRequest.timeout() starts at sendAsync, before a fresh JVM's first connect and
// write, which took 50 to 75 ms on a quiet 2-core CI machine (each scenario is a new JVM).
const shippedJDKStart = 100 * time.Millisecond

func script(rel ...string) func(root, tmp string) ([]string, error) {
	return func(root, _ string) ([]string, error) {
		out := slices.Clone(rel)
		for i, a := range out {
			if strings.HasPrefix(a, "examples/") {
				out[i] = filepath.Join(root, a)
			}
		}
		return out, nil
	}
}

// goProbe builds the Go probe (a module of the examples) into tmp, once.
func goProbe(root, tmp string) ([]string, error) {
	goBuildMu.Lock()
	defer goBuildMu.Unlock()
	bin := filepath.Join(tmp, "goprobe")
	if _, err := os.Stat(bin); err == nil {
		return []string{bin}, nil
	}
	cmd := exec.Command("go", "build", "-o", bin, "./probes/go")
	cmd.Dir = filepath.Join(root, "examples")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the Go probe: %v: %s", err, out)
	}
	return []string{bin}, nil
}

func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3" // Debian's, with python3-requests
	}
	return "python3"
}

const jars = "/usr/share/java/"

// Known differences, each from the library's source.
const (
	curlRetry = "curl re-sends any method, a POST included (rewinding its body), when a reused connection " +
		"ends before a byte of answer: lib/transfer.c Curl_retry_request, \"Connection died, retrying a fresh connect\"; " +
		"the go profile replays only idempotent methods"
	curlRedirect = "curl follows no redirect without -L"
	urllibPool   = "urllib.request opens a connection per call (AbstractHTTPHandler.do_open sends Connection: close): " +
		"no pooled connection to lose"
	urllibLoop = "urllib.request.HTTPRedirectHandler stops a loop after max_repeats = 4 visits of one URL (5 requests), " +
		"before its max_redirections = 10"
	requestsBlock = "HTTPAdapter(pool_block=True) makes urllib3's pool block at pool_maxsize (connectionpool.py _get_conn: " +
		"self.pool.get(block=self.block)): 5 connections at once, 20 calls in 4 waves; the urllib3 preset's pool is " +
		"pool_block=False's, unbounded (pool_maxsize only caps the connections kept)"
	undiciNoRetry = "Node's fetch (undici) fails the request running on a connection that closes, idempotent or not " +
		"(lib/dispatcher/client-h1.js onHttpSocketClose: util.errorRequest), and fetch sends nothing again: the GET on the dead " +
		"pooled connection fails, where the go profile replays it"
	undiciLoop        = "Node's fetch (undici lib/fetch) follows 20 redirects, the 21st request fails with \"redirect count exceeded\""
	urlconnWriteRetry = "HttpURLConnection.writeRequests sends a request once more on a new connection when writing it fails " +
		"(PrintStream.checkError, \"Error writing to server\"), whatever sun.net.http.retryPost: a POST written into a connection " +
		"the server closed while idle is executed once, on a new connection; the urlconnection profile has only parseHTTP's re-send, " +
		"which retryPost=false turns off"
	curlConnectTLS = "curl's --connect-timeout bounds the whole connection phase, the TLS handshake included " +
		"(CURLOPT_CONNECTTIMEOUT; lib/connect.c Curl_timeleft while connecting): it leaves a stalled handshake at 1 s, " +
		"where the go profile's Transport.TLSHandshakeTimeout (10 s) or deadline would"
	pySocketTLS = "Python's ssl.SSLSocket.do_handshake bounds the whole handshake by the socket's timeout (socket.settimeout, from " +
		"urlopen's timeout or urllib3's connect timeout), as one deadline (Modules/_ssl.c: do_handshake's loop waits for the time " +
		"left of a deadline set once from the timeout), not per read: a stalled handshake ends at 1 s, where the go profile's " +
		"Transport.TLSHandshakeTimeout (10 s) would"
	pySlowTLS = "Python's ssl.SSLSocket.do_handshake bounds the whole handshake by the socket's timeout, as one deadline " +
		"(Modules/_ssl.c; \"The handshake operation timed out\"): a handshake answered byte by byte over 2 s ends at 1 s, though " +
		"no byte is more than 50 ms apart; the go profile's Transport.TLSHandshakeTimeout (10 s) lets it finish"
	pyLookup = "Python's socket.create_connection calls socket.getaddrinfo, which no timeout bounds: the call waits out the " +
		"2 s lookup and succeeds, where the go profile's net.Dialer.Timeout (1 s) covers the lookup"
)

func shippedProbes() []shippedProbe {
	// version runs a command and keeps the first words of its first line: "curl 7.88.1".
	version := func(words int, args ...string) func() string {
		return func() string {
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			if err != nil {
				return "unknown"
			}
			f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
			return strings.Join(f[:min(words, len(f))], " ")
		}
	}
	// pkg is the version of a Debian package: the jars of /usr/share/java carry none.
	pkg := func(label, name string) func() string {
		return func() string {
			out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", name).Output()
			if err != nil {
				return label + " (version unknown)"
			}
			return label + " " + strings.TrimSpace(string(out)) + " (Debian " + name + ")"
		}
	}
	java := func(name string, extra ...string) func(root, tmp string) ([]string, error) {
		return script(append([]string{"examples/probes/java/run.sh", name}, extra...)...)
	}
	jvm := []string{"java", "javac"}
	curlKnown := map[string]string{"pooled-close-post": curlRetry, "pooled-reset-post": curlRetry, "redirect-loop": curlRedirect}
	curlConfKnown := maps.Clone(curlKnown)
	curlConfKnown["tls-stall"] = curlConnectTLS
	urllibKnown := map[string]string{"pooled-close": urllibPool, "pooled-close-post": urllibPool, "pooled-reset": urllibPool,
		"pooled-reset-post": urllibPool, "redirect-loop": urllibLoop}
	// With a timeout set, Python's socket timeout bounds the handshake as a deadline, and
	// nothing the lookup.
	withTimeout := func(known map[string]string) map[string]string {
		out := maps.Clone(known)
		out["tls-stall"], out["tls-slow-handshake"], out["slow-lookup"] = pySocketTLS, pySlowTLS, pyLookup
		return out
	}
	nodeKnown := map[string]string{"pooled-close": undiciNoRetry, "pooled-reset": undiciNoRetry, "redirect-loop": undiciLoop}
	hc4 := append(jvm, jars+"httpclient.jar", jars+"httpcore.jar", jars+"commons-logging.jar")
	urllib := script(python(), "examples/probes/python/urllib_probe.py")
	requests := script(python(), "examples/probes/python/requests_probe.py")
	node := script("node", "examples/probes/node/fetch_probe.mjs")
	pyVersion := version(2, python(), "--version")
	return append([]shippedProbe{
		{name: "curl, defaults", needs: []string{"curl"}, args: script("examples/probes/curl/probe.sh"), expect: []string{"go"}, known: curlKnown, version: version(2, "curl", "--version")},
		{name: "curl, --max-time 1.5 --connect-timeout 1", needs: []string{"curl"}, args: script("examples/probes/curl/probe.sh"),
			env: []string{"PROBE_MAX_TIME=1.5", "PROBE_CONNECT_TIMEOUT=1"}, expect: []string{"go", "deadline=1.5s", "connect-timeout=1s"}, known: curlConfKnown, version: version(2, "curl", "--version")},
		{name: "Python urllib, defaults", needs: []string{python()}, args: urllib, expect: []string{"go"}, known: urllibKnown, version: pyVersion},
		{name: "Python urllib, timeout=1", needs: []string{python()}, args: urllib, env: []string{"PROBE_TIMEOUT=1"},
			expect: []string{"go", "read-timeout=1s", "connect-timeout=1s"}, known: withTimeout(urllibKnown), version: pyVersion},
		{name: "Python requests, defaults", needs: []string{python(), "/usr/lib/python3/dist-packages/requests"}, args: requests, expect: []string{"urllib3", "retries=0"},
			must: map[string]must{
				"body-cut": {requests: n(1), outcome: vocab.OK, rule: "requests reads the body in pieces (iter_content: urllib3's read(amt)), which http.client ends at the FIN " +
					"without IncompleteRead, and urllib3 1.26.12's HTTPResponse has enforce_content_length=False: 40 of 100 bytes, no error"},
				"body-cut-reset":   {requests: n(1), outcome: vocab.Failed, rule: "the RST is a ChunkedEncodingError (ProtocolError, Connection broken), raised after urlopen returned: nothing retries it"},
				"body-cut-chunked": {requests: n(1), outcome: vocab.Failed, rule: "urllib3's read_chunked raises InvalidChunkLength at the FIN where a chunk's length is due: a ChunkedEncodingError, not retried"},
			},
			version: version(2, python(), "-c", "import requests; print('requests', requests.__version__)")},
		{name: "Python requests, timeout=(1, 1), pool_maxsize=5, pool_block", needs: []string{python(), "/usr/lib/python3/dist-packages/requests"}, args: requests,
			env: []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_READ_TIMEOUT=1", "PROBE_POOL=5"}, expect: []string{"urllib3", "retries=0", "read-timeout=1s", "connect-timeout=1s", "pool=5"},
			known: map[string]string{"burst": requestsBlock}, version: version(2, python(), "-c", "import requests; print('requests', requests.__version__)")},
		{name: "Node fetch, defaults", needs: []string{"node"}, args: node, expect: []string{"go"}, known: nodeKnown, version: version(1, "node", "--version")},
		{name: "Node fetch, AbortSignal.timeout(1000)", needs: []string{"node"}, args: node, env: []string{"PROBE_TIMEOUT=1"},
			expect: []string{"go", "deadline=1s"}, known: nodeKnown, version: version(1, "node", "--version")},
		{name: "Go net/http, DefaultClient", needs: []string{"go"}, args: goProbe, expect: []string{"go"}, version: runtime.Version},
		{name: "Go net/http, Client.Timeout 1s, Dialer.Timeout 1s", needs: []string{"go"}, args: goProbe,
			env: []string{"PROBE_TIMEOUT=1s", "PROBE_DIAL_TIMEOUT=1s"}, expect: []string{"go", "deadline=1s", "connect-timeout=1s"}, version: runtime.Version},
		{name: "JDK HttpClient, defaults", needs: jvm, args: java("JdkProbe"), expect: []string{"jdk"}, version: version(3, "java", "-version")},
		{name: "JDK HttpClient, connectTimeout 1s, timeout 1s", needs: jvm, args: java("JdkProbe"), env: []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_TIMEOUT=1"},
			expect: []string{"jdk", "read-timeout=1s", "connect-timeout=1s"}, version: version(3, "java", "-version"), tolerance: shippedJDKStart},
		{name: "HttpURLConnection, defaults", needs: jvm, args: java("UrlConnectionProbe"), expect: []string{"urlconnection"}, version: version(3, "java", "-version"),
			must: map[string]must{"body-cut": {requests: n(1), outcome: vocab.OK,
				rule: "sun.net.www.MeteredStream.read returns -1 at the socket's end, whatever Content-Length said: 40 of 100 bytes, no error"},
				"body-cut-chunked": {requests: n(1), outcome: vocab.Failed, rule: "sun.net.www.http.ChunkedInputStream raises IOException: Premature EOF where a chunk's length is due"}}},
		{name: "HttpURLConnection, connect and read timeouts 1s, retryPost false", needs: jvm, args: java("UrlConnectionProbe"),
			env:    []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_READ_TIMEOUT=1", "PROBE_RETRY_POST=false"},
			expect: []string{"urlconnection", "read-timeout=1s", "connect-timeout=1s", "no-resend-post=true"},
			known:  map[string]string{"idle-closed-post": urlconnWriteRetry}, version: version(3, "java", "-version")},
		{name: "Apache HttpClient 4.5, defaults", needs: hc4, args: java("Hc4Probe"), expect: []string{"hc4"}, version: pkg("httpclient", "libhttpclient-java")},
		{name: "Apache HttpClient 4.5, connectTimeout 1s, socketTimeout 1s", needs: hc4, args: java("Hc4Probe"),
			env: []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_SOCKET_TIMEOUT=1"}, expect: []string{"hc4", "read-timeout=1s", "connect-timeout=1s"},
			version: pkg("httpclient", "libhttpclient-java")},
		{name: "Apache HttpClient 5, defaults", needs: append(jvm, jars+"httpclient5.jar", jars+"slf4j-nop.jar"), args: java("Hc5Probe"),
			expect: []string{"hc5"}, version: pkg("httpclient5", "libhttpclient5-java")},
		{name: "Apache HttpClient 5, connectTimeout 1s, responseTimeout 1s", needs: append(jvm, jars+"httpclient5.jar", jars+"slf4j-nop.jar"), args: java("Hc5Probe"),
			env: []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_RESPONSE_TIMEOUT=1"}, expect: []string{"hc5", "read-timeout=1s", "connect-timeout=1s"},
			version: pkg("httpclient5", "libhttpclient5-java")},
		{name: "OkHttp 3, defaults", needs: append(jvm, jars+"okhttp.jar", jars+"okio.jar"), args: java("OkHttpProbe"), expect: []string{"okhttp"}, version: pkg("okhttp", "libokhttp-java")},
		{name: "OkHttp 3, connectTimeout 1s, readTimeout 1s", needs: append(jvm, jars+"okhttp.jar", jars+"okio.jar"), args: java("OkHttpProbe"),
			env: []string{"PROBE_CONNECT_TIMEOUT=1", "PROBE_READ_TIMEOUT=1"}, expect: []string{"okhttp", "read-timeout=1s", "connect-timeout=1s"}, version: pkg("okhttp", "libokhttp-java")},
	}, layerProbes(version)...)
}

// The retry layers' probes and their non-retrying contrasts, each judged on every scenario by
// its preset and held to its rules (must), read in the library's source. caps lengthens a
// scenario whose retried call outlives its cap's horizon, so that the row judges the call's end.
func layerProbes(version func(int, ...string) func() string) []shippedProbe {
	// 3 attempts with waits of rand x 1 s and rand x 2 s (botocore's standard and adaptive
	// modes): a call that fails each attempt ends up to 3 s after its attempts, which the
	// 5 s caps leave too little of past a loaded machine's start of Python and botocore.
	botoCaps := map[string]time.Duration{"silent": 8 * time.Second, "unreachable": 9 * time.Second,
		"tls-stall": 8 * time.Second, "tls-slow-handshake": 8 * time.Second}
	for _, sc := range []string{"tls-unknown-ca", "tls-wrong-host", "tls-expired", "tls-incomplete-chain", "tls-old-version", "tls-mixed", "nxdomain", "servfail"} {
		botoCaps[sc] = 7 * time.Second
	}
	// 5 attempts with waits of rand x 1, 2, 4 and 8 s (legacy): up to 15 s after its attempts,
	// 5 s of connect or handshake timeouts for the last three.
	legacyCaps := map[string]time.Duration{"unreachable": 23 * time.Second, "tls-stall": 23 * time.Second, "tls-slow-handshake": 23 * time.Second}
	for _, sc := range []string{"silent", "trickle", "slow-head", "reserve", "fresh-close", "fresh-reset", "body-cut-reset", "body-cut-chunked",
		"status-503-0", "status-503-5", "burst", "tls-unknown-ca", "tls-wrong-host", "tls-expired", "tls-incomplete-chain", "tls-old-version",
		"tls-mixed", "nxdomain", "servfail"} {
		legacyCaps[sc] = 20 * time.Second
	}
	goMod := func(module string) func() string {
		return func() string {
			out, err := exec.Command("go", "list", "-C", "../examples", "-m", "-f", "{{.Path}} {{.Version}}", module).Output()
			if err != nil {
				return module + " (version unknown)"
			}
			return strings.TrimSpace(string(out))
		}
	}
	npm := func(name string) func() string {
		return func() string {
			b, err := os.ReadFile(filepath.Join(layersDir, "node_modules", name, "package.json"))
			if m := regexp.MustCompile(`"version":\s*"([^"]+)"`).FindSubmatch(b); err == nil && m != nil {
				return name + " " + string(m[1])
			}
			return name + " (version unknown)"
		}
	}
	pyMod := func(name string) func() string {
		return version(2, python(), "-c", "import "+name+"; print('"+name+"', "+name+".__version__)")
	}
	layer := func(name string) []string { return []string{"node", filepath.Join(layersDir, "node_modules", name)} }
	nodeLayer := func(file string) func(root, tmp string) ([]string, error) {
		return script("node", "examples/probes/node/layers/"+file)
	}
	const (
		rhRetry = "go-retryablehttp's DefaultRetryPolicy (client.go baseRetryPolicy) retries every transport error but a certificate's, " +
			"a redirect limit's, a scheme's and a header's, whatever the method (the body is rewound for every attempt), " +
			"RetryMax 4 times (defaultRetryMax)"
		rhWait = "DefaultBackoff waits RetryWaitMin x 2^attempt, at most RetryWaitMax (1 s and 30 s by default: 1, 2, 4, 8 s), " +
			"and HTTPClient.Timeout bounds each attempt, not the call"
		rhStatus = "baseRetryPolicy retries a 429 and every 5xx but 501; DefaultBackoff sleeps a 429's or 503's Retry-After " +
			"exactly (0 s here)"
		restyAny = "resty's Backoff (retry.go) retries any error of any method when RetryCount > 0, a POST's and a body read's " +
			"included (Client.Timeout cuts the trickle's body), after jitterBackoff's waits of 100 ms doubling to 2 s at most"
		undiciDead = "undici fails the request running on a connection that closes, idempotent or not (lib/dispatcher/client-h1.js " +
			"onHttpSocketClose: util.errorRequest), and request() retries nothing: the call on the dead pooled connection fails"
		rubyRetry = "Net::HTTP#transport_request (ruby 3.1 lib/net/http.rb) sends an IDEMPOTENT_METHODS_ request (GET HEAD PUT DELETE " +
			"OPTIONS TRACE) once more on a new connection after Net::ReadTimeout, EOFError, ECONNRESET and the like (max_retries 1); never a POST"
		rubyShort = "HTTPResponse#read_body_0 (ruby 3.1 lib/net/http/response.rb) reads a Content-Length body with " +
			"`@socket.read clen, dest, true # ignore EOF`: the FIN ends it, 40 of 100 bytes, no error"
		gotRetry = "got's retry (core/options.js): limit 2, methods GET PUT HEAD DELETE OPTIONS TRACE, statuses 408 413 429 500 " +
			"502 503 504 521 522 524 and network errors (ECONNRESET, ETIMEDOUT...); calculate-retry-delay.js waits 2^(n-1) s " +
			"plus up to 100 ms of noise, and takes a Retry-After of 0 as absent (if (retryAfter))"
	)
	return []shippedProbe{
		{name: "go-retryablehttp, defaults", expect: []string{"retryablehttp"}, preset: "retryablehttp", needs: []string{"go"}, args: goBuild("retryablehttp"),
			version: goMod("github.com/hashicorp/go-retryablehttp"), must: map[string]must{
				"reserve":           {executions: n(1), outcome: vocab.OK, rule: "go-retryablehttp sets no timeout (go-cleanhttp's pooled client): the 2 s answer comes"},
				"status-503-0":      {requests: n(5), rule: rhStatus},
				"pooled-close-post": {executions: n(2), outcome: vocab.OK, call: time.Second, margin: 300 * time.Millisecond, rule: rhRetry + "; " + rhWait},
			}},
		{name: "go-retryablehttp, Timeout 1s", expect: []string{"retryablehttp", "attempt-timeout=1s"}, preset: "retryablehttp", needs: []string{"go"}, args: goBuild("retryablehttp"),
			env: []string{"PROBE_TIMEOUT=1s"}, version: goMod("github.com/hashicorp/go-retryablehttp"),
			caps: map[string]time.Duration{"silent": 30 * time.Second, "reserve": 30 * time.Second},
			must: map[string]must{
				"silent":       {requests: n(5), call: 20 * time.Second, margin: time.Second, rule: rhRetry + "; " + rhWait},
				"reserve":      {executions: n(5), call: 20 * time.Second, margin: time.Second, rule: rhRetry + ": a POST charged 5 times"},
				"status-503-0": {requests: n(5), rule: rhStatus},
			}},
		{name: "go-retryablehttp, Timeout 1s, waits 100ms to 800ms", expect: []string{"retryablehttp", "attempt-timeout=1s", "backoff=100ms", "backoff-max=800ms"}, preset: "retryablehttp", needs: []string{"go"}, args: goBuild("retryablehttp"),
			env: []string{"PROBE_TIMEOUT=1s", "PROBE_WAIT_MIN=100ms", "PROBE_WAIT_MAX=800ms"}, version: goMod("github.com/hashicorp/go-retryablehttp"),
			caps: map[string]time.Duration{"unreachable": 15 * time.Second, "slow-head": 15 * time.Second, "tls-stall": 15 * time.Second},
			must: map[string]must{
				"trickle": {requests: n(1), call: time.Second, margin: 300 * time.Millisecond,
					rule: "Client.Do returns at the head: a body that outlasts HTTPClient.Timeout fails in the caller's read, which no retry covers"},
				"pooled-close-post": {executions: n(2), outcome: vocab.OK, rule: rhRetry + ": the dead pooled connection's error is retried, a POST's too"},
				"status-408":        {requests: n(1), rule: "baseRetryPolicy retries no 4xx but 429"},
				"redirect-loop":     {requests: n(10), rule: "net/http's Client stops after 10 redirects, an error baseRetryPolicy does not retry (redirectsErrorRe)"},
				"unreachable": {call: 6500 * time.Millisecond, margin: 500 * time.Millisecond,
					rule: "5 attempts of HTTPClient.Timeout 1 s and waits of 0.1, 0.2, 0.4 and 0.8 s (DefaultBackoff)"},
				"tls-unknown-ca":  {conns: n(1), rule: "baseRetryPolicy does not retry a certificate error (isCertError, notTrustedErrorRe)"},
				"tls-old-version": {conns: n(5), rule: "a TLS alert (protocol version) is not a certificate error: " + rhRetry},
			}},
		{name: "resty, defaults", expect: []string{"resty"}, preset: "resty", needs: []string{"go"}, args: goBuild("resty"), version: goMod("github.com/go-resty/resty/v2"),
			must: map[string]must{
				"reserve":       {executions: n(1), outcome: vocab.OK, rule: "resty retries nothing by default (Client.RetryCount 0)"},
				"status-503-0":  {requests: n(1), rule: "resty retries nothing by default (Client.RetryCount 0)"},
				"redirect-loop": {requests: n(10), rule: "resty leaves redirects to net/http's Client, which stops after 10"},
			}},
		{name: "resty, SetRetryCount(2), SetTimeout(1s)", expect: []string{"resty", "retries=2", "attempt-timeout=1s"}, preset: "resty", needs: []string{"go"}, args: goBuild("resty"),
			env: []string{"PROBE_RETRY_COUNT=2", "PROBE_TIMEOUT=1s"}, version: goMod("github.com/go-resty/resty/v2"),
			caps: map[string]time.Duration{"silent": 10 * time.Second, "unreachable": 10 * time.Second, "tls-stall": 10 * time.Second},
			must: map[string]must{
				"silent":         {requests: n(3), call: 3300 * time.Millisecond, margin: 400 * time.Millisecond, rule: restyAny},
				"reserve":        {executions: n(3), rule: restyAny},
				"trickle":        {requests: n(3), rule: restyAny},
				"body-cut-reset": {requests: n(3), outcome: vocab.Failed, rule: restyAny + ": Client.execute reads the body within the attempt (readAllWithLimit)"},
				"status-503-0":   {requests: n(1), rule: "resty retries a status only through AddRetryCondition"},
				"redirect-loop":  {requests: n(30), rule: restyAny + ": net/http's redirect limit (10) is an error, retried"},
				"tls-unknown-ca": {conns: n(3), rule: restyAny + ": a certificate error is retried"},
			}},
		{name: "got, defaults", expect: []string{"got"}, preset: "got", needs: layer("got"), args: nodeLayer("got_probe.mjs"), version: npm("got"),
			must: map[string]must{
				"reserve":       {executions: n(1), outcome: vocab.OK, rule: "got has no timeout by default"},
				"status-408":    {requests: n(3), call: 3050 * time.Millisecond, margin: 350 * time.Millisecond, rule: gotRetry},
				"status-503-0":  {requests: n(3), call: 3050 * time.Millisecond, margin: 350 * time.Millisecond, rule: gotRetry},
				"redirect-loop": {requests: n(11), rule: "got follows 10 redirects (maxRedirects), then MaxRedirectsError, not retried"},
				"pooled-close":  {executions: n(2), outcome: vocab.OK, rule: gotRetry + ": the dead pooled connection's ECONNRESET is retried for a GET, after 1 s"},
				"body-cut": {requests: n(3), outcome: vocab.Failed, call: 3050 * time.Millisecond, margin: 350 * time.Millisecond,
					rule: "core/index.js turns the response's 'aborted' into a ReadError with code ECONNRESET (strictContentLength off), in retry.errorCodes: " + gotRetry},
				"pooled-close-post": {executions: n(1), outcome: vocab.Failed, rule: gotRetry + ": never a POST"},
			}},
		{name: "got, timeout.request 1s", expect: []string{"got", "attempt-timeout=1s"}, preset: "got", needs: layer("got"), args: nodeLayer("got_probe.mjs"), env: []string{"PROBE_TIMEOUT=1"}, version: npm("got"),
			caps: map[string]time.Duration{"silent": 15 * time.Second},
			must: map[string]must{
				"silent": {requests: n(3), call: 6100 * time.Millisecond, margin: 400 * time.Millisecond,
					rule: gotRetry + "; timeout.request bounds each attempt, not the call: 3 of 1 s and waits of 1 and 2 s"},
				"trickle":      {requests: n(3), rule: "timeout.request bounds each attempt, its body included: " + gotRetry},
				"reserve":      {executions: n(1), rule: gotRetry + ": never a POST"},
				"status-503-5": {requests: n(1), rule: "calculate-retry-delay.js gives up when the Retry-After (5 s) is longer than timeout.request (1 s)"},
			}},
		{name: "axios, timeout 1000", expect: []string{"axios", "read-timeout=1s"}, preset: "axios", needs: layer("axios"), args: nodeLayer("axios_probe.mjs"), env: []string{"PROBE_TIMEOUT=1"}, version: npm("axios"),
			must: map[string]must{
				"silent": {requests: n(1), call: time.Second, margin: 300 * time.Millisecond, rule: "axios retries nothing"},
				"trickle": {outcome: vocab.OK, rule: "axios's timeout in Node (lib/adapters/http.js) is a timer to the response head, then " +
					"req.setTimeout, the socket's idle limit: a trickle whose bytes come within it survives"},
				"reserve":       {executions: n(1), rule: "axios retries nothing"},
				"redirect-loop": {requests: n(22), rule: "follow-redirects follows 21 redirects (axios's maxRedirects), then ERR_FR_TOO_MANY_REDIRECTS"},
				"tls-stall":     {call: time.Second, margin: 300 * time.Millisecond, rule: "axios's timeout runs from the request's start: the handshake is within it"},
			}},
		{name: "axios, defaults", expect: []string{"axios"}, preset: "axios", needs: layer("axios"), args: nodeLayer("axios_probe.mjs"), version: npm("axios"),
			must: map[string]must{
				"reserve":           {executions: n(1), outcome: vocab.OK, rule: "axios has no timeout by default (timeout 0) and retries nothing"},
				"redirect-loop":     {requests: n(22), rule: "follow-redirects follows 21 redirects (axios's maxRedirects), then ERR_FR_TOO_MANY_REDIRECTS"},
				"pooled-close":      {executions: n(1), outcome: vocab.Failed, rule: "Node's http.Agent fails a request on a kept-alive socket that closes (ECONNRESET, socket hang up); axios retries nothing"},
				"pooled-close-post": {executions: n(1), outcome: vocab.Failed, rule: "Node's http.Agent fails a request on a kept-alive socket that closes; axios retries nothing"},
			}},
		{name: "undici request(), defaults", expect: []string{"undici"}, preset: "undici", needs: layer("undici"), args: nodeLayer("undici_probe.mjs"), version: npm("undici"),
			must: map[string]must{
				"reserve":           {executions: n(1), outcome: vocab.OK, rule: "undici's headersTimeout and bodyTimeout are 300 s by default"},
				"redirect-loop":     {requests: n(1), rule: "undici's request() follows no redirect"},
				"pooled-close":      {executions: n(1), conns: n(1), outcome: vocab.Failed, rule: undiciDead},
				"pooled-reset-post": {executions: n(1), conns: n(1), outcome: vocab.Failed, rule: undiciDead},
			}},
		{name: "undici request(), headersTimeout 1s, bodyTimeout 1s, connect.timeout 1s", expect: []string{"undici", "read-timeout=1s", "connect-timeout=1s"}, preset: "undici", needs: layer("undici"), args: nodeLayer("undici_probe.mjs"),
			env: []string{"PROBE_HEADERS_TIMEOUT=1", "PROBE_BODY_TIMEOUT=1", "PROBE_CONNECT_TIMEOUT=1"}, version: npm("undici"),
			must: map[string]must{
				"pooled-close":      {executions: n(1), conns: n(1), outcome: vocab.Failed, rule: undiciDead},
				"pooled-reset-post": {executions: n(1), conns: n(1), outcome: vocab.Failed, rule: undiciDead},
				"silent": {requests: n(1), call: 1250 * time.Millisecond, margin: 350 * time.Millisecond,
					rule: "undici's timers of a second or more run on a 500 ms tick (lib/util/timers.js, TICK_MS 499): headersTimeout fires between 1 and 1.5 s"},
				"trickle":       {outcome: vocab.OK, rule: "bodyTimeout is per chunk: bytes 500 ms apart never reach it"},
				"redirect-loop": {requests: n(1), rule: "undici's request() follows no redirect (no RedirectHandler unless asked)"},
			}},
		{name: "Python requests, urllib3 Retry(total=3, allowed_methods=None, backoff_factor=0.1), timeout=(1, 1)", expect: []string{"urllib3", "backoff=100ms", "retry-methods=all", "connect-timeout=1s", "read-timeout=1s"}, preset: "urllib3",
			needs: []string{python(), "/usr/lib/python3/dist-packages/requests"}, args: script(python(), "examples/probes/python/requests_probe.py"),
			env:     []string{"PROBE_RETRIES=3", "PROBE_RETRY_ANY_METHOD=1", "PROBE_BACKOFF_FACTOR=0.1", "PROBE_CONNECT_TIMEOUT=1", "PROBE_READ_TIMEOUT=1"},
			version: pyMod("urllib3"), caps: map[string]time.Duration{"silent": 10 * time.Second, "unreachable": 10 * time.Second, "tls-stall": 10 * time.Second, "tls-slow-handshake": 10 * time.Second},
			must: map[string]must{
				"silent": {requests: n(4), call: 4600 * time.Millisecond, margin: 400 * time.Millisecond,
					rule: "urllib3's Retry(total=3) spends total on read errors; get_backoff_time waits 0 after the first error, then backoff_factor x 2^(n-1): 0.2, 0.4 s"},
				"reserve":           {executions: n(4), rule: "allowed_methods=None retries every method (Retry._is_method_retryable): a POST charged 4 times"},
				"status-503-0":      {requests: n(4), rule: "Retry.is_retry retries a 413, 429 or 503 that carries Retry-After (respect_retry_after_header), with no status_forcelist"},
				"tls-unknown-ca":    {conns: n(4), rule: "urllib3's urlopen counts an SSLError as a connection error, retried (Retry.increment)"},
				"pooled-close-post": {executions: n(2), outcome: vocab.OK, rule: "allowed_methods=None: the dead pooled connection's POST is sent again"},
			}},
		{name: "Python httpx, defaults", expect: []string{"httpx"}, preset: "httpx", needs: []string{python(), "/usr/lib/python3/dist-packages/httpx"},
			args: script(python(), "examples/probes/python/httpx_probe.py"), version: pyMod("httpx"),
			caps: map[string]time.Duration{"silent": 10 * time.Second},
			must: map[string]must{
				"silent":        {requests: n(1), call: 5 * time.Second, margin: 300 * time.Millisecond, rule: "httpx's DEFAULT_TIMEOUT_CONFIG is Timeout(5.0): a 5 s read limit (_config.py)"},
				"trickle":       {outcome: vocab.OK, rule: "httpx's read timeout is per read"},
				"pooled-close":  {executions: n(1), outcome: vocab.Failed, rule: "httpcore sends no request again on a dead pooled connection"},
				"redirect-loop": {requests: n(1), rule: "httpx follows no redirect by default (follow_redirects=False)"},
			}},
		{name: "Python httpx, Timeout(1)", expect: []string{"httpx", "connect-timeout=1s", "read-timeout=1s", "lease-timeout=1s"}, preset: "httpx", needs: []string{python(), "/usr/lib/python3/dist-packages/httpx"},
			args: script(python(), "examples/probes/python/httpx_probe.py"), env: []string{"PROBE_TIMEOUT=1"}, version: pyMod("httpx"),
			must: map[string]must{
				"silent":  {requests: n(1), call: time.Second, margin: 300 * time.Millisecond, rule: "httpx.Timeout(1): a 1 s read limit; no retry"},
				"trickle": {outcome: vocab.OK, rule: "httpx's read timeout is per read: bytes 500 ms apart never reach it"},
				"reserve": {executions: n(1), rule: "httpx retries no request (HTTPTransport's retries are connects only)"},
			}},
		{name: "Ruby Net::HTTP, defaults", expect: []string{"ruby"}, preset: "ruby", needs: []string{"ruby"},
			args: script("ruby", "examples/probes/ruby/net_http_probe.rb"), version: version(2, "ruby", "-v"),
			must: map[string]must{
				"pooled-close":      {executions: n(2), outcome: vocab.OK, rule: rubyRetry},
				"body-cut":          {requests: n(1), outcome: vocab.OK, rule: rubyShort},
				"body-cut-reset":    {requests: n(2), outcome: vocab.Failed, rule: rubyRetry + "; the body is read within it (res.reading_body)"},
				"body-cut-chunked":  {requests: n(2), outcome: vocab.Failed, rule: "read_chunked has no ignore_eof: its EOFError is re-sent as " + rubyRetry},
				"pooled-close-post": {executions: n(1), outcome: vocab.Failed, rule: rubyRetry},
				"redirect-loop":     {requests: n(1), rule: "Net::HTTP#request returns every response: no redirect is followed"},
			}},
		{name: "Ruby Net::HTTP, read_timeout 1, open_timeout 1", expect: []string{"ruby", "read-timeout=1s", "connect-timeout=1s"}, preset: "ruby", needs: []string{"ruby"},
			args: script("ruby", "examples/probes/ruby/net_http_probe.rb"), env: []string{"PROBE_READ_TIMEOUT=1", "PROBE_OPEN_TIMEOUT=1"}, version: version(2, "ruby", "-v"),
			must: map[string]must{
				"silent":  {requests: n(2), outcome: vocab.Failed, call: 2 * time.Second, margin: 300 * time.Millisecond, rule: rubyRetry},
				"reserve": {executions: n(1), outcome: vocab.Failed, call: time.Second, margin: 300 * time.Millisecond, rule: rubyRetry},
				"trickle": {outcome: vocab.OK, rule: "BufferedIO#rbuf_fill waits read_timeout for each read (net/protocol.rb)"},
			}},
		{name: "Node http.request, defaults", expect: []string{"node-http"}, preset: "node-http", needs: []string{"node"},
			args: script("node", "examples/probes/node/http_probe.mjs"), version: version(1, "node", "--version"),
			must: map[string]must{
				"silent":        {outcome: vocab.Hang, rule: nodeIdle + "; without the option only http.globalAgent's timeout (5000) arms it, and nothing listens"},
				"pooled-close":  {executions: n(1), outcome: vocab.Failed, rule: nodeNoResend},
				"redirect-loop": {requests: n(1), rule: "http.request follows no redirect: the 302 is the response"},
			}},
		{name: "Node http.request, timeout 1000", expect: []string{"node-http", "read-timeout=1s", "connect-timeout=1s"}, preset: "node-http", needs: []string{"node"},
			args: script("node", "examples/probes/node/http_probe.mjs"), env: []string{"PROBE_TIMEOUT=1"}, version: version(1, "node", "--version"),
			must: map[string]must{
				"silent":            {requests: n(1), outcome: vocab.Failed, call: time.Second, margin: 300 * time.Millisecond, rule: nodeIdle},
				"trickle":           {outcome: vocab.OK, rule: nodeIdle + ": bytes 500 ms apart re-arm it"},
				"pooled-reset-post": {executions: n(1), outcome: vocab.Failed, rule: nodeNoResend},
				"tls-stall": {conns: n(1), outcome: vocab.Failed, call: 2 * time.Second, margin: 300 * time.Millisecond,
					rule: "node 20 lib/net.js Socket.prototype._onTimeout lets the first expiry pass while a write is in progress: the request waits in the handshaking TLS socket, so the handshake ends at twice the timeout"},
			}},
		{name: "Python aiohttp, defaults", expect: []string{"aiohttp"}, preset: "aiohttp", needs: []string{python(), "/usr/lib/python3/dist-packages/aiohttp"},
			args: script(python(), "examples/probes/python/aiohttp_probe.py"), version: pyMod("aiohttp"),
			must: map[string]must{
				"reserve":       {executions: n(1), outcome: vocab.OK, rule: "aiohttp's DEFAULT_TIMEOUT is ClientTimeout(total=300) (client.py); no retry"},
				"trickle":       {outcome: vocab.OK, rule: "ClientTimeout(total=300) lets the 4 s trickle finish"},
				"redirect-loop": {requests: n(10), rule: "ClientSession raises TooManyRedirects at its 10th request (max_redirects 10, client.py _request)"},
			}},
		{name: "Python aiohttp, ClientTimeout(total=1)", expect: []string{"aiohttp", "deadline=1s"}, preset: "aiohttp", needs: []string{python(), "/usr/lib/python3/dist-packages/aiohttp"},
			args: script(python(), "examples/probes/python/aiohttp_probe.py"), env: []string{"PROBE_TOTAL=1"}, version: pyMod("aiohttp"),
			must: map[string]must{
				"silent":        {requests: n(1), call: time.Second, margin: 300 * time.Millisecond, rule: "ClientTimeout.total is a deadline for the call"},
				"trickle":       {requests: n(1), outcome: vocab.Failed, call: time.Second, margin: 300 * time.Millisecond, rule: "ClientTimeout.total covers the body"},
				"pooled-close":  {executions: n(1), outcome: vocab.Failed, rule: "aiohttp sends no request again on a dead pooled connection (ServerDisconnectedError)"},
				"redirect-loop": {requests: n(10), rule: "ClientSession raises TooManyRedirects at its 10th request (max_redirects 10, client.py _request)"},
				"tls-mixed":     {conns: n(2), outcome: vocab.OK, rule: "TCPConnector._create_direct_connection tries the host's next address after a ClientConnectorError, a certificate's (ClientConnectorCertificateError) included"},
			}},
		{name: "botocore, retries mode standard, read_timeout 0.3, connect_timeout 1", expect: []string{"botocore-standard", "read-timeout=300ms", "connect-timeout=1s"},
			preset: "botocore-standard", needs: []string{python(), "/usr/lib/python3/dist-packages/botocore"}, args: script(python(), "examples/probes/python/botocore_probe.py"),
			env: []string{"PROBE_RETRY_MODE=standard", "PROBE_READ_TIMEOUT=0.3", "PROBE_CONNECT_TIMEOUT=1"}, version: pyMod("botocore"), storm: true,
			caps: botoCaps,
			must: map[string]must{
				"silent":       {requests: n(3), rule: botoStandard + ": a ReadTimeoutError (HTTPClientError) is transient"},
				"reserve":      {executions: n(3), rule: botoStandard + ", any method: a POST too"},
				"status-503-0": {requests: n(3), rule: botoStandard + ": 503 is in _TRANSIENT_STATUS_CODES; Retry-After is not read"},
			}},
		{name: "botocore, retries mode adaptive, read_timeout 0.3, connect_timeout 1", expect: []string{"botocore-adaptive", "read-timeout=300ms", "connect-timeout=1s"},
			preset: "botocore-adaptive", needs: []string{python(), "/usr/lib/python3/dist-packages/botocore"}, args: script(python(), "examples/probes/python/botocore_probe.py"),
			env: []string{"PROBE_RETRY_MODE=adaptive", "PROBE_READ_TIMEOUT=0.3", "PROBE_CONNECT_TIMEOUT=1"}, version: pyMod("botocore"), storm: true,
			caps: botoCaps,
			must: map[string]must{
				"status-503-0": {requests: n(3), rule: botoStandard + ", adaptive too: a 503 is no throttling error, the rate limiter stays off (adaptive.py ClientRateLimiter)"},
			}},
		{name: "botocore, retries mode legacy, read_timeout 0.3, connect_timeout 1", expect: []string{"botocore-legacy", "read-timeout=300ms", "connect-timeout=1s"},
			preset: "botocore-legacy", needs: []string{python(), "/usr/lib/python3/dist-packages/botocore"}, args: script(python(), "examples/probes/python/botocore_probe.py"),
			env: []string{"PROBE_RETRY_MODE=legacy", "PROBE_READ_TIMEOUT=0.3", "PROBE_CONNECT_TIMEOUT=1"}, version: pyMod("botocore"), storm: true,
			caps: legacyCaps,
			must: map[string]must{
				"silent":       {requests: n(5), rule: botoLegacy + ": general_socket_errors holds ReadTimeoutError"},
				"reserve":      {executions: n(5), rule: botoLegacy + ", any method: a POST too"},
				"status-503-0": {requests: n(5), rule: botoLegacy + ": service_unavailable (503); Retry-After is not read"},
			}},
		{name: "aws-sdk-go-v2 retry.NewStandard, http.Client.Timeout 300ms", expect: []string{"aws-standard", "attempt-timeout=300ms"}, preset: "aws-standard",
			needs: []string{"go"}, args: goBuild("aws"), env: []string{"PROBE_TIMEOUT=300ms"}, version: goMod("github.com/aws/aws-sdk-go-v2"), storm: true,
			must: map[string]must{
				"silent":       {requests: n(3), rule: awsStandard + ": Client.Timeout's error is a timeout (RetryableConnectionError)"},
				"reserve":      {executions: n(3), rule: awsStandard + ", any method: a POST too"},
				"status-503-0": {requests: n(3), rule: awsStandard + ": 503 is in DefaultRetryableHTTPStatusCodes; Retry-After is not read"},
				"fresh-close": {executions: n(1), rule: awsStandard + "; RetryableConnectionError (retryable_error.go) retries a \"connection reset\" " +
					"but not io.EOF, which no case matches: a FIN where the answer was due ends the call"},
				"body-cut": {executions: n(1), outcome: vocab.Failed, rule: "net/http's body reader returns io.ErrUnexpectedEOF at a FIN short of " +
					"Content-Length, which RetryableConnectionError does not match: not retried"},
				"burst": {executions: n(55), rule: awsStandard + "; each retry takes defaultRetryCost 14 tokens of the retryer's 500 " +
					"(DefaultRetryRateTokens), a timeout's too (standard.go): 35 of the 20 calls' 40 retries are granted"},
			}},
		{name: "go-retryablehttp in a retry storm, Timeout 300ms, waits 100ms to 800ms", expect: []string{"retryablehttp", "attempt-timeout=300ms", "backoff=100ms", "backoff-max=800ms"},
			preset: "retryablehttp", needs: []string{"go"}, args: goBuild("retryablehttp"), version: goMod("github.com/hashicorp/go-retryablehttp"),
			env: []string{"PROBE_TIMEOUT=300ms", "PROBE_WAIT_MIN=100ms", "PROBE_WAIT_MAX=800ms"}, only: []string{"storm"}},
		{name: "resty in a retry storm, SetRetryCount(2), SetTimeout(300ms)", expect: []string{"resty", "retries=2", "attempt-timeout=300ms"},
			preset: "resty", needs: []string{"go"}, args: goBuild("resty"), version: goMod("github.com/go-resty/resty/v2"),
			env: []string{"PROBE_RETRY_COUNT=2", "PROBE_TIMEOUT=300ms"}, only: []string{"storm"}},
		{name: "got in a retry storm, timeout.request 300ms", expect: []string{"got", "attempt-timeout=300ms"},
			preset: "got", needs: layer("got"), args: nodeLayer("got_probe.mjs"), version: npm("got"),
			env: []string{"PROBE_TIMEOUT=0.3"}, only: []string{"storm"}},
		{name: "Python requests in a retry storm, urllib3 Retry(total=3, backoff_factor=0.1), timeout=(1, 0.3)", expect: []string{"urllib3", "backoff=100ms", "connect-timeout=1s", "read-timeout=300ms"},
			preset: "urllib3", needs: []string{python(), "/usr/lib/python3/dist-packages/requests"}, args: script(python(), "examples/probes/python/requests_probe.py"), version: pyMod("urllib3"),
			env: []string{"PROBE_RETRIES=3", "PROBE_BACKOFF_FACTOR=0.1", "PROBE_CONNECT_TIMEOUT=1", "PROBE_READ_TIMEOUT=0.3"}, only: []string{"storm"}},
	}
}

// Node 20's http.request rules (lib/_http_agent.js, lib/_http_client.js).
const (
	nodeIdle     = "the timeout option is the socket's idle timer (_http_agent.js setRequestSocket: socket.setTimeout), which only emits 'timeout'; the probe destroys the request then"
	nodeNoResend = "_http_client.js sends nothing again: a reused socket the server closed fails the call with ECONNRESET (socket hang up) and req.reusedSocket"
)

// aws-sdk-go-v2 v1.48.0's standard retryer, as examples/probes/aws drives it.
const awsStandard = "aws-sdk-go-v2's retry.Standard makes 3 attempts (DefaultMaxAttempts)"

// botocore 1.29.27's retry modes, as botocore_probe.py drives them.
const (
	botoStandard = "botocore's standard mode (retries/standard.py) makes 3 attempts (DEFAULT_MAX_ATTEMPTS)"
	botoLegacy   = "botocore's legacy mode (data/_retry.json __default__) makes 5 attempts (max_attempts)"
)

// layersDir holds the Node probes of the retry layers and their lockfile, from the probe
// package's directory.
const layersDir = "../examples/probes/node/layers"

// goBuildMu serializes goBuild: two configurations of one probe, run at once, build one binary.
var goBuildMu sync.Mutex

// goBuild builds a Go probe of the examples module into tmp, once.
func goBuild(name string) func(root, tmp string) ([]string, error) {
	return func(root, tmp string) ([]string, error) {
		goBuildMu.Lock()
		defer goBuildMu.Unlock()
		bin := filepath.Join(tmp, name)
		if _, err := os.Stat(bin); err == nil {
			return []string{bin}, nil
		}
		cmd := exec.Command("go", "build", "-o", bin, "./probes/"+name)
		cmd.Dir = filepath.Join(root, "examples")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build the %s probe: %v: %s", name, err, out)
		}
		return []string{bin}, nil
	}
}

// expectOf builds the Expect of a shippedProbe's expect list, as the command line's --expect
// and limit flags would.
func expectOf(spec []string) (Expect, error) {
	pred := &predict.Predictor{Defaults: spec[0]}
	set := map[string]bool{}
	pool := PresetPool(spec[0])
	params := pred.Params()
	for _, kv := range spec[1:] {
		name, value, _ := strings.Cut(kv, "=")
		if name == "pool" {
			n, err := strconv.Atoi(value)
			if err != nil {
				return Expect{}, err
			}
			pool = n
			continue
		}
		i := slices.IndexFunc(params, func(p param.Param) bool { return p.Name == name })
		if i < 0 {
			return Expect{}, fmt.Errorf("no flag --%s", name)
		}
		switch p := params[i]; {
		case p.Duration != nil:
			d, err := time.ParseDuration(value)
			if err != nil {
				return Expect{}, err
			}
			*p.Duration = d
		case p.Int != nil:
			n, err := strconv.Atoi(value)
			if err != nil {
				return Expect{}, err
			}
			*p.Int = n
		case p.String != nil:
			*p.String = value
		default:
			*p.Bool = value == "true"
		}
		set[name] = true
	}
	var given []string
	for name := range set {
		given = append(given, name)
	}
	return NewExpect(spec[0], ExpectLimits{LeaseTimeout: pred.LeaseTimeout, ConnectTimeout: pred.ConnectTimeout,
		ReadTimeout: pred.ReadTimeout, Deadline: pred.Deadline, Backoff: pred.Backoff, Retries: pred.Retries,
		HC5Retries: pred.HC5Retries, ValidateAfterInactivity: pred.ValidateAfterInactivity, NoStaleCheck: pred.NoStaleCheck,
		EvictIdle: pred.EvictIdle, EvictInterval: pred.EvictInterval, NoResendPost: pred.NoResendPost, ResendAnyMethod: pred.ResendAnyMethod,
		AttemptTimeout: pred.Layer.AttemptTimeout, BackoffMax: pred.Layer.BackoffMax, BackoffMult: pred.Layer.BackoffMult,
		Jitter: pred.Layer.Jitter, Noise: pred.Layer.Noise, RetryStatuses: pred.Layer.RetryStatuses,
		RetryAfterAs: pred.Layer.RetryAfterPolicy, RetryMethods: pred.Layer.RetryMethods,
		Given: given}, pool)
}

// TestShippedProbes runs every shipped probe at its defaults and configured, with the
// matching expectation: every row but the known differences must agree with the model, and
// every known difference must still differ (else its entry is stale). A probe whose runtime
// is missing is skipped with the reason, except under CI=true, where it fails. With
// -update-clients it writes docs/clients.md from the measurements; without, the page's
// sections of the probes that ran must match them.
func TestShippedProbes(t *testing.T) {
	if !*runShipped {
		t.Skip("runs with -shipped (make probes): every shipped probe, some minutes")
	}
	t.Parallel() // beside TestShippedGRPCProbes, through the same gate
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	room, sentinel := shippedRoom()
	var mu sync.Mutex // guards sections and ranks, which the probes fill at once
	sections := map[string]string{}
	ranks := map[string]costRank{}
	one := func(sp shippedProbe) func(t *testing.T) {
		return func(t *testing.T) {
			for _, need := range sp.needs {
				if _, err := exec.LookPath(need); err != nil {
					if _, serr := os.Stat(need); serr != nil {
						if os.Getenv("CI") == "true" {
							t.Fatalf("%s is missing: CI must install it (.ci/run)", need)
						}
						t.Skipf("%s is missing", need)
					}
				}
			}
			args, err := sp.args(root, tmp)
			if err != nil {
				t.Fatal(err)
			}
			spec := sp.expect
			if spec == nil {
				spec = []string{"go"} // without a preset: go's clock for the rows' times
			}
			e, err := expectOf(spec)
			if err != nil {
				t.Fatal(err)
			}
			p := New(Command{Args: args, Env: append([]string{"PROBE_JAVA_CACHE=" + filepath.Join(tmp, "java")}, sp.env...)})
			for i, s := range Scenarios() {
				if slices.Contains(shippedCapsArg, s.Name) {
					p.caps[i] = shippedCap
				}
				if c, ok := sp.caps[s.Name]; ok {
					p.caps[i] = c
				}
			}
			if p.Only = shippedOnly(sp); p.Only == "" {
				t.Skip("none of -shipped-scenarios is among its scenarios")
			}
			if sp.expect != nil {
				p.Expect = &e
			}
			// The rows are judged like labrun's own runs: against the noise measured while
			// they ran (a time the machine's noise explains is inconclusive, not a failure).
			p.gate = room
			begin := time.Now()
			obs, err := p.observeAll(context.Background(), experiments.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tol := cmp.Or(sp.tolerance, 50*time.Millisecond)
			run := p.result(obs, tol)
			runner.Judge(&run, sentinel, begin, time.Now(), tol)
			// A row that disagrees is measured once more: a 2-core machine shared with other
			// work can stall a JVM for tens of milliseconds now and then. It fails when it
			// disagrees twice.
			again := slices.Collect(maps.Keys(mustBreaches(sp, obs)))
			if sp.expect != nil {
				again = append(again, disagreeing(run, sp.known)...)
			}
			slices.Sort(again)
			if again = slices.Compact(again); len(again) > 0 {
				t.Logf("measuring again: %s", strings.Join(again, ", "))
				p.Only = strings.Join(again, ",")
				more, err := p.observeAll(context.Background(), experiments.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range more {
					obs[slices.IndexFunc(obs, func(x observation) bool { return x.sc.Name == o.sc.Name })] = o
				}
				p.Only = shippedOnly(sp)
				run = p.result(obs, tol)
				runner.Judge(&run, sentinel, begin, time.Now(), tol)
			}
			for name, why := range mustBreaches(sp, obs) {
				t.Errorf("%s: %s (%s)", name, strings.Join(why, "; "), sp.must[name].rule)
			}
			for _, r := range run.Rows {
				name, _, _ := strings.Cut(r.Name, ":")
				_, isKnown := sp.known[name]
				switch {
				case sp.expect == nil: // judged by must alone
				case r.Skipped != "":
				case isKnown && r.Pass:
					t.Errorf("%s: agrees with --expect %s now; remove its known difference", name, e.Label)
				case !isKnown && !r.Pass && r.Inconclusive != "":
					t.Logf("%s: inconclusive: %s (%s; %s)", name, r.Inconclusive, r.Reason, r.Server)
				case !isKnown && !r.Pass:
					t.Errorf("%s: %s (%s)", name, r.Reason, r.Server)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			sections[sp.name] = clientSection(sp, e, run, obs, display(args, root, tmp))
			ranks[sp.name] = rankOf(obs)
		}
	}
	// Every probe at once, its scenarios as the machine allows: one gate (runner.Gate, as
	// labrun all's) admits every scenario of every probe, gRPC's included, so that the probes
	// wait for each other only when the machine is busy.
	t.Run("all", func(t *testing.T) {
		for _, sp := range shippedProbes() {
			t.Run(sp.name, func(t *testing.T) {
				t.Parallel()
				one(sp)(t)
			})
		}
	})
	if *shippedScenarios == "" {
		checkClientsDoc(t, filepath.Join(root, "docs", "clients.md"), sections, ranks)
	}
}

// shippedRoom is the one gate, with its noise sentinel, that admits the scenarios of every
// shipped probe of the test binary, HTTP and gRPC.
var shippedRoom = sync.OnceValues(func() (*runner.Gate, *noise.Sentinel) {
	s := noise.Start()
	return runner.NewScenarioGate(runtime.NumCPU(), s), s
})

// costRank is what a slow or failing downstream cost one shipped probe: the reservation's
// executions, the requests for one 503 with Retry-After: 0, and the silent server's call
// (its time as the probe reported it, or the cap it was still waiting at). -1: not run.
type costRank struct {
	reserve, status503 int
	silent             time.Duration
	silentCapped       bool
	bodyCut            string // what it made of the body-cut scenario's short body; "" not run
}

func rankOf(obs []observation) costRank {
	r := costRank{reserve: -1, status503: -1, silent: -1}
	meas := measureAll(obs)
	for i, o := range obs {
		m := meas[i]
		if o.skipped != "" {
			continue
		}
		switch o.sc.Name {
		case "reserve":
			r.reserve = m.executions
		case "status-503-0":
			r.status503 = m.arrivals
		case "body-cut":
			r.bodyCut = bodyCutWord(m)
		case "silent":
			switch {
			case o.exec.Killed:
				r.silent, r.silentCapped = o.sc.Cap, true
			case m.call != nil:
				r.silent = *m.call
			case m.left != nil:
				r.silent = *m.left
			}
		}
	}
	return r
}

// bodyCutWord is a ranking's cell for the body-cut scenario: the short body taken or an
// error, and the requests when the call was sent again.
func bodyCutWord(m measures) string {
	w := "error"
	if m.outcome == vocab.OK {
		w = "short body, no error"
	}
	if m.arrivals > 1 {
		w += fmt.Sprintf(", %d requests", m.arrivals)
	}
	return w
}

// parseRanking reads the rows of a ranking that ranking wrote, by probe.
func parseRanking(text string) map[string]costRank {
	out := map[string]costRank{}
	count := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			return -1
		}
		return n
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.TrimSuffix(line, " |"), " | ")
		if len(f) < 4 || len(f) > 5 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| client") {
			continue
		}
		r := costRank{reserve: count(f[1]), status503: count(f[2]), silent: -1}
		if len(f) == 5 && f[4] != "—" {
			r.bodyCut = f[4]
		}
		silent := f[3]
		if c, ok := strings.CutPrefix(silent, "at the cap ("); ok {
			r.silent, _ = time.ParseDuration(strings.TrimSuffix(c, ")"))
			r.silentCapped = true
		} else if sec, ok := strings.CutPrefix(silent, "about "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSuffix(sec, " s"), 64); err == nil {
				r.silent = time.Duration(v * float64(time.Second))
			}
		}
		out[strings.TrimPrefix(f[0], "| ")] = r
	}
	return out
}

// ranking is docs/clients.md's ranking of the shipped probes by what a slow or failing
// downstream costs: executions on reserve first, then requests on status-503-0, then the
// silent server's time (in whole seconds, so that a few milliseconds do not reorder it); a
// figure not measured ranks last. A probe not run keeps its row of the ranking before (old);
// one in neither is left out until it runs.
func ranking(ranks map[string]costRank, old string) string {
	probes := shippedProbes()
	before := parseRanking(old)
	ranks = maps.Clone(ranks)
	names := make([]string, 0, len(probes))
	for _, sp := range probes {
		if _, ok := ranks[sp.name]; !ok {
			r, ok := before[sp.name]
			if !ok {
				continue
			}
			ranks[sp.name] = r
		}
		names = append(names, sp.name)
	}
	silentKey := func(r costRank) int {
		if r.silentCapped {
			return math.MaxInt
		}
		return int(r.silent.Round(time.Second) / time.Second)
	}
	slices.SortStableFunc(names, func(a, b string) int {
		ra, rb := ranks[a], ranks[b]
		return cmp.Or(cmp.Compare(rb.reserve, ra.reserve), cmp.Compare(rb.status503, ra.status503), cmp.Compare(silentKey(rb), silentKey(ra)))
	})
	var b strings.Builder
	b.WriteString(rankingStart + "\n## What a slow or failing downstream costs\n\n" +
		"Every probe of this page ranked by what it does to a downstream in trouble: how often it charged the `reserve` scenario's " +
		"reservation (a POST whose answer takes 2 s), how many requests one `status-503-0` call sent (a 503 with " +
		"Retry-After: 0), and how long its call stayed on the `silent` server, as the probe reported it (\"at the cap\": " +
		"still waiting when it was killed), and what it made of a body of 100 bytes closed after 40 (`body-cut`): an error, or the " +
		"short body taken as whole, and its requests when it sent the call again. \"—\": the scenario is not among those its configuration runs.\n\n" +
		"| client, configuration | executions on `reserve` | requests on `status-503-0` | the call on `silent` | a body cut short (`body-cut`) |\n|---|---|---|---|---|\n")
	count := func(n int) string {
		if n < 0 {
			return "—"
		}
		return strconv.Itoa(n)
	}
	for _, name := range names {
		r := ranks[name]
		silent := "—"
		switch {
		case r.silentCapped:
			silent = fmt.Sprintf("at the cap (%v)", r.silent)
		case r.silent >= 0:
			silent = fmt.Sprintf("about %.1f s", r.silent.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, count(r.reserve), count(r.status503), silent, orDash(r.bodyCut))
	}
	b.WriteString(rankingEnd + "\n")
	return b.String()
}

const (
	rankingStart = "<!-- ranking -->"
	rankingEnd   = "<!-- end of ranking -->"
)

// rankingTimes are the ranking's times, which the drift check leaves out: the counts stay.
var rankingTimes = regexp.MustCompile(`about [0-9.]+ s`)

// rankingRows is a ranking's rows without their times, sorted: rows whose counts tie are
// ordered by their time on silent, which random waits move (botocore's standard and adaptive
// modes swap places from run to run), so the drift check holds the rows and not their order.
func rankingRows(r string) string {
	lines := strings.Split(rankingTimes.ReplaceAllString(r, ""), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// disagreeing lists the scenarios whose rows disagree with the expectation other than the
// known differences, and the known differences that agree.
func disagreeing(run results.Run, known map[string]string) []string {
	var out []string
	for _, r := range run.Rows {
		name, _, _ := strings.Cut(r.Name, ":")
		if _, isKnown := known[name]; r.Skipped == "" && isKnown == r.Pass {
			out = append(out, name)
		}
	}
	return out
}

// display is a command as docs/clients.md shows it: paths from the repository's root.
func display(args []string, root, tmp string) string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.TrimPrefix(a, root+string(filepath.Separator))
		if strings.HasPrefix(a, tmp) {
			a = filepath.Base(a) // a Go probe, built from examples/probes (goprobe from examples/probes/go)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// clientSection is a probe's section of docs/clients.md: the measurements, in figures that
// do not move with a millisecond of scheduling.
func clientSection(sp shippedProbe, e Expect, run results.Run, obs []observation, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### %s\n\n", sectionStart(sp.name), sp.name)
	cmd := "`" + command + "`"
	if len(sp.env) > 0 {
		cmd = "`" + strings.Join(sp.env, " ") + "` " + cmd
	}
	closest, tied := "", ""
	for _, c := range run.Config {
		switch c.Name {
		case "closest":
			closest = c.Value
		case "tied":
			tied = strings.ReplaceAll(c.Value, results.TiedSep, ", ")
		}
	}
	if tied != "" {
		closest += " (a tie the rows cannot break with " + tied + ")"
	}
	fmt.Fprintf(&b, "%s%s.\n\n%s. Closest client the model knows: %s.", measuredWith, sp.version(), cmd, closest)
	switch {
	case sp.expect != nil:
		fmt.Fprintf(&b, " CI expects `--expect %s`", strings.Join(expectFlags(sp.expect), " "))
		if len(sp.known) > 0 {
			b.WriteString(" on every row but the known differences")
		}
		b.WriteString(".")
	case sp.preset != "":
		fmt.Fprintf(&b, " The model has no profile `%s` yet: CI holds the rows to the library's rules below.", sp.preset)
	}
	if len(sp.only) > 0 {
		b.WriteString(" Run on the scenarios that show the configuration: `--only " + strings.Join(sp.only, ",") + "`.")
	}
	b.WriteString("\n\n| scenario | outcome | executions | connections | what it does |\n|---|---|---|---|---|\n")
	meas := measureAll(obs)
	for i, o := range obs {
		r := run.Rows[i]
		conns := "—" // shown where the model counts them: a redirect loop's vary from run to run
		if r.NewConnections != nil && r.ExpectedNewConnections != nil {
			conns = strconv.Itoa(*r.NewConnections)
		}
		execs := "—"
		if r.ServerExecutions != nil {
			execs = strconv.Itoa(*r.ServerExecutions)
		}
		if o.sc.kind == kindStorm && r.ExpectedExecutions != nil && r.ExpectedExecutionsMax != nil {
			execs = fmt.Sprintf("%d to %d", *r.ExpectedExecutions, *r.ExpectedExecutionsMax) // the band: the count moves by run
		}
		mark := ""
		if _, ok := sp.known[o.sc.Name]; ok {
			mark = " (known difference)"
		}
		// How the client left (FIN or RST) stays out of the page: a client that closes with
		// unread bytes in its socket (a trickle's) resets, and whether a byte was there is a
		// race of a microsecond.
		what := leftHow.Replace(meaning(o, e.predict(o.sc).clock(meas[i]), docMs(r, run.ToleranceMs, mark != ""), false))
		outcome := orDash(string(r.Outcome))
		if tie := preFirstTie(o.sc.pre, e.limits); tie != "" {
			// A race: the page says so rather than the side this run's measure fell on.
			outcome, execs, conns, what = "—", "—", "—", tie
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s%s |\n", o.sc.Name, outcome, execs, conns, what, mark)
	}
	if len(sp.must) > 0 {
		b.WriteString("\nWhat CI holds it to, from the library's source:\n\n")
		for _, name := range slices.Sorted(maps.Keys(sp.must)) {
			fmt.Fprintf(&b, "- `%s`: %s: %s.\n", name, sp.must[name], sp.must[name].rule)
		}
	}
	if len(sp.known) > 0 {
		b.WriteString("\nKnown differences from the model:\n\n")
		var names []string
		for name := range sp.known {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Fprintf(&b, "- `%s`: %s.\n", name, sp.known[name])
		}
	}
	b.WriteString(sectionEnd + "\n")
	return b.String()
}

// leftHow removes how a client left from a row's meaning, for docs/clients.md.
var leftHow = strings.NewReplacer(" (FIN)", "", " (RST)", "")

// docMs writes a row's times for docs/clients.md so that the page does not change with a few
// milliseconds: a time within the gate's tolerance of the model's (or the row's own tolerance,
// a lookup's 300 ms) is written as the model's, and every time is rounded to 100 ms. (A JDK timeout that counts from send() shows some 25 ms
// early, around a rounding boundary of 50 ms.) A time the model gives no figure for is rounded
// to 250 ms: such a row is not judged, and a JVM's first call spreads its time over some tens of
// milliseconds (the JDK's connect timeout, which counts from before the TLS classes load, ends
// a stalled handshake 930 to 970 ms after the ClientHello; a slow lookup's call takes 2020 to
// 2070 ms).
func docMs(r results.Row, runTolMs float64, known bool) func(time.Duration) string {
	return func(d time.Duration) string {
		grain := 100 * time.Millisecond
		if r.ExpectedMs != nil {
			want := time.Duration(*r.ExpectedMs * float64(time.Millisecond))
			tol := max(50*time.Millisecond, time.Duration(runTolMs*float64(time.Millisecond))) // the probe's, shippedJDKStart
			if r.ToleranceMs != nil {
				tol = max(tol, time.Duration(*r.ToleranceMs*float64(time.Millisecond))) // a lookup's, a burst's
			}
			// A time the machine's noise explains (an inconclusive row) is shown as the
			// model's: the page says what the library does, not what a busy machine did. A
			// known difference differs from the model by design: its own time is shown.
			if (d-want).Abs() <= tol || r.Inconclusive != "" && !known {
				d = want
			}
		} else {
			grain = 250 * time.Millisecond
		}
		return "about " + ms(roundTo(d, grain))
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// expectFlags writes an expect list as the command line's flags.
func expectFlags(spec []string) []string {
	out := []string{spec[0]}
	for _, kv := range spec[1:] {
		name, value, _ := strings.Cut(kv, "=")
		if value == "true" { // a switch
			out = append(out, "--"+name)
			continue
		}
		out = append(out, "--"+name, value)
	}
	return out
}

func sectionStart(name string) string { return "<!-- client: " + name + " -->" }

const sectionEnd = "<!-- end of client -->"

// clientsIntro opens docs/clients.md.
const clientsIntro = `# What real HTTP clients do, measured

Every probe of ` + "`examples/probes/`" + ` ([probe.md](probe.md)), at its library's defaults and configured,
run by ` + "`labrun probe`" + ` against every scenario on this machine's library versions. The page is
written by ` + "`make clients`" + ` from the measurements; ` + "`make probes`" + ` (run by CI) measures again,
fails when a row disagrees with the model under the expected profile (other than a known
difference), when a known difference agrees (it is stale), or when the page no longer says what
the libraries do. Times are rounded to 100 ms; the silent server and the unreachable address are
capped at 5 s, so "still waiting at the cap" means no timeout of 3 s or less.

A known difference is a rule of the library, read in its source, that the model's profile does
not encode (yet): the row is measured and shown, and CI holds it to differ.

Each row ends with the whole call's time as the probe reported it, every retry and back-off
included, and a call sent more than once gives its requests' arrivals at the server. The retry
layers (go-retryablehttp, resty, got, axios, urllib3's ` + "`Retry`" + ` under requests) and the
clients that retry nothing to set beside them (undici, httpx, aiohttp) run on the scenarios
that show their configuration, with caps that fit their retries. CI holds each to its preset
under ` + "`--expect`" + ` and to its library's rules, listed under each with its source.
The ranking below sets every probe side by side by what a downstream in trouble pays.
`

// checkClientsDoc compares docs/clients.md's sections with the measured ones, or rewrites
// the page with -update-clients (keeping the sections of the probes that did not run).
// measuredWith starts the line of a section that names the library's version. The drift
// check leaves it out: a machine may have another patch release of a runtime (a JDK updated
// by Debian) with the same behaviour, which the rows themselves check.
const measuredWith = "Measured with "

// withoutVersion is a section without its version line, for the drift check; where the
// kernel refuses namespaces, without the lookup scenarios' rows too (skipped here, measured
// where the page was written).
func withoutVersion(section string) string {
	noLookups := netns.Available() != nil
	var keep []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, measuredWith) || (noLookups && isLookupRow(line)) {
			continue
		}
		line = wholeCallTimes.ReplaceAllString(line, "")
		keep = append(keep, closestFit.ReplaceAllString(line, "Closest client the model knows: (fitted)."))
	}
	return strings.Join(keep, "\n")
}

// closestFit is the sentence naming the closest client: its limits are fitted to times a JVM's
// start moves by tens of ms (a 1 s connect timeout fits as 1s or 1.1s from one run to the
// next), so the drift check leaves it out; the rows judge the client.
var closestFit = regexp.MustCompile(`Closest client the model knows: [^.]*(\.[0-9][^.]*)*\.`)

// wholeCallTimes are the whole call's time and its requests' arrivals in a row: a
// back-off's jitter and the scheduler move them by more than a rounding absorbs, so the drift
// check leaves them out; the counts stay, and the rows judge the times. "failed at once" and
// "failed after about 1000 ms" are one failure either side of a second (a JVM's first TLS
// error loads classes for hundreds of milliseconds, more on a loaded machine). A burst's waves
// and an unreachable address's time are whole calls too: a retry layer's random waits move them
// by seconds. So is the end of a stalled handshake in a Go client that retries: the first
// attempt's dial goes on after its attempt and ends with the command (resty's and
// aws-sdk-go-v2's, a wait of rand x 50 ms either side of a rounding).
var wholeCallTimes = regexp.MustCompile(`; the call took (about [0-9]+|under 50) ms|, (in bursts )?at 0(/[0-9.]+)* s|failed (after about [0-9]+ ms|at once)` +
	`|: [0-9]+ calls finish in [0-9]+ waves? \((about [0-9]+|under 50) ms\)|gave up after about [0-9]+ ms|left the handshake at about [0-9]+ ms`)

// isLookupRow reports whether a line of a section is a lookup scenario's row.
func isLookupRow(line string) bool {
	for _, s := range Scenarios() {
		if s.kind == kindLookup && strings.HasPrefix(line, "| `"+s.Name+"` |") {
			return true
		}
	}
	return false
}

func checkClientsDoc(t *testing.T, path string, sections map[string]string, ranks map[string]costRank) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	page := string(old)
	oldSection := func(name string) string {
		_, rest, ok := strings.Cut(page, sectionStart(name)+"\n")
		body, _, ok2 := strings.Cut(rest, sectionEnd+"\n")
		if !ok || !ok2 {
			return ""
		}
		return sectionStart(name) + "\n" + body + sectionEnd + "\n"
	}
	oldRanking := ""
	if _, rest, ok := strings.Cut(page, rankingStart); ok {
		if body, _, ok := strings.Cut(rest, rankingEnd+"\n"); ok {
			oldRanking = rankingStart + body + rankingEnd + "\n"
		}
	}
	rankingNow := ranking(ranks, oldRanking)
	if *updateClients {
		var b strings.Builder
		b.WriteString(clientsIntro)
		if r := cmp.Or(rankingNow, oldRanking); r != "" {
			b.WriteString("\n" + r)
		}
		b.WriteString(stormRankingBlock(page)) // TestStormRanking writes that block
		for _, sp := range shippedProbes() {
			s := sections[sp.name]
			if s == "" {
				s = oldSection(sp.name)
			}
			if s != "" {
				b.WriteString("\n" + s)
			}
		}
		b.WriteString(grpcClientsBlock(page)) // TestShippedGRPCProbes writes that block
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !strings.HasPrefix(page, clientsIntro) {
		t.Errorf("docs/clients.md does not open with the generated introduction: run make clients")
	}
	if len(ranks) == len(shippedProbes()) && rankingRows(rankingNow) != rankingRows(oldRanking) {
		t.Errorf("docs/clients.md's ranking is stale: run make clients\ngot:\n%s\nwant:\n%s", oldRanking, rankingNow)
	}
	for _, sp := range shippedProbes() {
		if s, ran := sections[sp.name]; ran && withoutVersion(s) != withoutVersion(oldSection(sp.name)) {
			t.Errorf("docs/clients.md is stale for %s: run make clients\nthe lines that differ, as compared (- the page, + this run):\n%s\ngot:\n%s\nwant:\n%s",
				sp.name, differingLines(withoutVersion(oldSection(sp.name)), withoutVersion(s)), oldSection(sp.name), s)
		}
	}
}

// differingLines lists the lines of a that b lacks ("- ") and those of b that a lacks ("+ "),
// so that a log cut short still shows what moved.
func differingLines(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range as {
		if !slices.Contains(bs, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range bs {
		if !slices.Contains(as, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
