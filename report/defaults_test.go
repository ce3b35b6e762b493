package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

// testDefaults are three clients that exercise the renderers: a plain row with a comma in
// a cell (CSV quoting), a row with "|" and quotes in cells (markdown and CSV escaping) and
// an empty source, reuse and re-send (a dash in table and markdown, an empty cell in CSV),
// and Go's row, whose long cells must neither wrap nor be cut.
func testDefaults() []results.ClientDefaults {
	return []results.ClientDefaults{
		{Name: "hc5", Client: "Apache HttpClient 5.6",
			Lease: "3 min", Connect: "3 min", Read: "none = infinite",
			Pool: "5 per route, 25 total", Call: "none in classic",
			Source:    "httpclient5 5.6 RequestConfig",
			Reuse:     "validateAfterInactivity 2 s; evictIdleConnections off",
			Resend:    "DefaultHttpRequestRetryStrategy: 1 retry of an idempotent method after an I/O error",
			Handshake: "TlsConfig handshakeTimeout, else SocketConfig soTimeout, else none",
			Lookup:    "none (InetAddress.getAllByName)"},
		{Name: "netty", Client: "Reactor Netty",
			Lease: "45 s", Connect: "30 s", Read: "none",
			Pool: "max(2 x cores, 16) per address | queue 2x", Call: `".timeout()" operator`},
		{Name: "go", Client: "Go net/http (DefaultClient, DefaultTransport)",
			Lease: "none (MaxConnsPerHost 0: no limit)", Connect: "30 s (net.Dialer.Timeout), TLS handshake 10 s",
			Read: "none (ResponseHeaderTimeout 0, no per-read timeout)",
			Pool: "2 idle per host, 100 idle total, idle 90 s", Call: "Client.Timeout, default 0 = none",
			Source: "net/http transport.go DefaultTransport and client.go DefaultClient, Go 1.26",
			Reuse:  "a background read on every idle connection closes it when a FIN or RST arrives",
			Resend: "a reused connection that fails before any response byte: GET, HEAD, OPTIONS, TRACE or an Idempotency-Key"},
	}
}

func TestDefaultsGolden(t *testing.T) {
	for _, f := range nonRunFormats() {
		name := "defaults." + extensions[f] + ".golden"
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteDefaults(&got, f, testDefaults()); err != nil {
				t.Fatalf("render: %v", err)
			}
			checkGolden(t, name, got.String())
		})
	}
}

// TestDefaultsTableIsOneLinePerClient checks that long cells, and a newline in a cell, leave
// every client on one line of the same width as the borders in the table form (drawn when it
// fits): no wrapping, no truncation.
func TestDefaultsTableIsOneLinePerClient(t *testing.T) {
	rows := testDefaults()
	rows[2].Source = strings.Repeat("a very long source ", 20)
	rows[0].Read = "none\n= infinite"
	var buf bytes.Buffer
	if err := writeDefaultsTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	// title, top border, header, rule, one line per client, bottom border, footer
	if got, want := len(lines), 5+len(rows)+1; got != want {
		t.Fatalf("got %d lines, want %d:\n%s", got, want, buf.String())
	}
	table := lines[1 : len(lines)-1]
	width := utf8.RuneCountInString(table[0])
	for i, l := range table {
		if got := utf8.RuneCountInString(l); got != width {
			t.Errorf("table line %d is %d runes wide, want %d: %q", i+1, got, width, l)
		}
	}
	if !strings.Contains(buf.String(), "| "+strings.TrimSpace(rows[2].Source)+" |") {
		t.Errorf("long source was cut or wrapped:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "| none = infinite ") {
		t.Errorf("newline in a cell was not collapsed:\n%s", buf.String())
	}
}

// TestDefaultsTableIgnoresEastAsianSetting expects the same bytes with tablewriter's East
// Asian width off and on: the title's "·" and the dash of an empty cell are ambiguous-width.
func TestDefaultsTableIgnoresEastAsianSetting(t *testing.T) {
	sameUnderEastAsian(t, func(buf *bytes.Buffer) error { return WriteDefaults(buf, FormatTable, testDefaults()) })
}

func TestDefaultsNoRows(t *testing.T) {
	for _, f := range nonRunFormats() {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteDefaults(&buf, f, nil); err != nil {
				t.Fatalf("render: %v", err)
			}
			got := buf.String()
			switch f {
			case FormatJSON:
				var doc map[string]json.RawMessage
				if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
					t.Fatal(err)
				}
				if got, want := string(doc["clients"]), "[]"; got != want {
					t.Errorf("clients: got %s, want %s", got, want)
				}
			case FormatCSV:
				if want := strings.Join(defaultsCSVColumns, ",") + "\n"; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			default:
				if !strings.Contains(got, "lease wait") || !strings.HasSuffix(got, defaultsFooter+"\n") {
					t.Errorf("got %q, want the column headings and the footer", got)
				}
			}
		})
	}
}

func TestDefaultsJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteDefaults(&buf, FormatJSON, testDefaults()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Clients []results.ClientDefaults `json:"clients"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := testDefaults()
	if len(got.Clients) != len(want) {
		t.Fatalf("got %d clients, want %d", len(got.Clients), len(want))
	}
	for i := range want {
		if got.Clients[i] != want[i] {
			t.Errorf("client %d: got %+v, want %+v", i, got.Clients[i], want[i])
		}
	}
}

func TestDefaultsErrorsWriteNothing(t *testing.T) {
	tests := []struct {
		name    string
		f       Format
		wantErr string
	}{
		{"unknown format", "xml", `render defaults: unknown format "xml" (want table, json, markdown, csv or junit)`},
		{"empty format", "", `render defaults: unknown format "" (want table, json, markdown, csv or junit)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteDefaults(&buf, tt.f, testDefaults())
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error, want none:\n%s", buf.Len(), buf.String())
			}
		})
	}
}

func TestWriteDefaultsErrorIsWrapped(t *testing.T) {
	boom := errors.New("disk full")
	for _, f := range nonRunFormats() {
		t.Run(string(f), func(t *testing.T) {
			if err := WriteDefaults(failingWriter{boom}, f, testDefaults()); !errors.Is(err, boom) {
				t.Errorf("got %v, want it to wrap %v", err, boom)
			}
		})
	}
}

func ExampleWriteDefaults() {
	rows := []results.ClientDefaults{{
		Name: "okhttp", Client: "OkHttp", Lease: "n/a", Connect: "10 s", Read: "10 s per read",
		Pool: "5 idle kept 5 min", Call: "none", Source: "okhttp 3.x OkHttpClient.Builder",
	}}
	if err := WriteDefaults(os.Stdout, FormatCSV, rows); err != nil {
		panic(err)
	}
	// Output:
	// name,client,lease,connect,read,pool,call,source,reuse,resend,handshake,lookup
	// okhttp,OkHttp,n/a,10 s,10 s per read,5 idle kept 5 min,none,okhttp 3.x OkHttpClient.Builder,,,,
}

// TestDefaultsPiped: at no known width (a pipe, a file) the defaults are cards whose lines a
// pager shows, under 120 columns, not a table as wide as its longest source.
func TestDefaultsPiped(t *testing.T) {
	rows := testDefaults()
	rows[2].Source = strings.Repeat("a very long source ", 20)
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatTable}, rows); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(line); n >= pagerWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	if !strings.Contains(buf.String(), "  TLS handshake TlsConfig") && !strings.Contains(buf.String(), "  TLS handshake  ") {
		t.Errorf("no card for hc5:\n%s", buf.String())
	}
}
