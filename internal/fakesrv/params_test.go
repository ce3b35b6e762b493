package fakesrv

import (
	"bufio"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz targets of the request parameter parsers. Their seed corpora are in
// testdata/fuzz; run one with, for example, go test -run '^$' -fuzz FuzzParseBehaviour
// -fuzztime 30s ./fakesrv.

// FuzzParseBehaviour: ParseBehaviour never panics; what it accepts is within the documented
// bounds, and Behaviour.Path writes it back to the same Behaviour.
func FuzzParseBehaviour(f *testing.F) {
	for _, seed := range []struct{ path, query string }{
		{"/reserve", "order=42&delay=500ms&idempotent=1"},
		{"/trickle", "bytes=10&every=400ms&delay=1s"},
		{"/stall", "max=2s&call=3"},
		{"/delay", "delay=&bytes=1048576&stall=true"},
		{"/x", "delay=-1s"},
		{"/x", "every=9223372036854775807ns&bytes=1"},
		{"/reserve", "order=a+b%26c&stall=1"},
	} {
		f.Add(seed.path, seed.query)
	}
	f.Fuzz(func(t *testing.T, path, rawQuery string) {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		b, err := ParseBehaviour(path, q)
		if err != nil {
			if b != (Behaviour{}) || err.Error() == "" {
				t.Fatalf("error %v with a non-zero Behaviour %+v", err, b)
			}
			return
		}
		if b.Delay < 0 || b.Every < 0 || b.MaxStall < 0 || b.Bytes < 0 || b.Bytes > MaxBytes || len(b.Order) > MaxOrderLen {
			t.Fatalf("out of bounds: %+v", b)
		}
		u, err := url.Parse(b.Path())
		if err != nil {
			t.Fatalf("Path %q does not parse: %v", b.Path(), err)
		}
		back, err := ParseBehaviour(u.Path, u.Query())
		if err != nil || back != b {
			t.Fatalf("round trip of %+v through %q: got %+v, %v", b, b.Path(), back, err)
		}
	})
}

// FuzzPathNumber: pathNumber never panics, and a number it accepts lies within its bounds
// and is what follows the prefix.
func FuzzPathNumber(f *testing.F) {
	for _, p := range []string{"/status/503", "/status/", "/status", "/status/+200", "/status/200/x",
		"/status/99999999999999999999", "/status/0101", "/redirect/-1"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		n, err := pathNumber(path, "/status/", "status: CODE", minStatus, maxStatus)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "status: CODE must be a whole number between 101 and 599") {
				t.Fatalf("error %q does not name the parameter and its range", err)
			}
			return
		}
		if n < minStatus || n > maxStatus {
			t.Fatalf("%q: got %d, out of bounds", path, n)
		}
		if s := strings.TrimPrefix(path, "/status/"); strings.TrimLeft(s, "0") != strconv.Itoa(n) {
			t.Fatalf("%q: got %d", path, n)
		}
	})
}

// FuzzCheckHeaderValue: a value checkHeaderValue accepts goes through an HTTP/1.1 head and
// back unchanged, as Retry-After.
func FuzzCheckHeaderValue(f *testing.F) {
	for _, v := range []string{"120", "Wed, 21 Oct 2015 07:28:00 GMT", "", " 1", "1\r\nX: 1", "\x00", "é", "a\tb"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if err := checkHeaderValue("retry-after", v); err != nil {
			return
		}
		var sb strings.Builder
		h := http.Header{"Retry-After": {v}}
		if err := h.Write(&sb); err != nil {
			t.Fatal(err)
		}
		got, err := textproto.NewReader(bufio.NewReader(strings.NewReader(sb.String() + "\r\n"))).ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%q: head %q does not read back: %v", v, sb.String(), err)
		}
		if got.Get("Retry-After") != v {
			t.Fatalf("%q: read back %q", v, got.Get("Retry-After"))
		}
	})
}

// FuzzParseBudget: parseBudget never panics or wraps: it accepts digits only, gives their
// value in milliseconds, and saturates what a Duration cannot hold.
func FuzzParseBudget(f *testing.F) {
	for _, v := range []string{"0", "100", "18446744073710", "9223372036854", "9223372036855",
		"99999999999999999999999", "-5", "+5", "", "1e3", " 1", "٣"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseBudget(v)
		digits := v != "" && strings.Trim(v, "0123456789") == ""
		if (err == nil) != digits {
			t.Fatalf("%q: got %v, %v; want an error exactly when it is not all digits", v, d, err)
		}
		if err != nil {
			return
		}
		ms, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case d < 0:
			t.Fatalf("%q: negative budget %v", v, d)
		case perr == nil && ms <= maxBudgetMs && d != time.Duration(ms)*time.Millisecond:
			t.Fatalf("%q: got %v, want %d ms", v, d, ms)
		case (perr != nil || ms > maxBudgetMs) && d != math.MaxInt64:
			t.Fatalf("%q: got %v, want saturation", v, d)
		}
	})
}

func TestParseBudget(t *testing.T) {
	tests := []struct {
		v       string
		want    time.Duration
		wantErr bool
	}{
		{"0", 0, false},
		{"250", 250 * time.Millisecond, false},
		{"9223372036854", 9223372036854 * time.Millisecond, false},
		{"9223372036855", math.MaxInt64, false},
		{"18446744073710", math.MaxInt64, false},
		{"99999999999999999999999", math.MaxInt64, false},
		{"", 0, true},
		{"-5", 0, true},
		{"+5", 0, true},
		{"1.5", 0, true},
		{"soon", 0, true},
	}
	for _, tt := range tests {
		got, err := parseBudget(tt.v)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("parseBudget(%q): got %v, %v; want %v, error %v", tt.v, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParamErrorsSayWhatTheyWant: a 400 names the parameter and what it wants, in the
// caller's words, never the Go parser's ("strconv.Atoi: parsing", "time: invalid duration").
func TestParamErrorsSayWhatTheyWant(t *testing.T) {
	for _, tt := range []struct{ key, value, want string }{
		{"bytes", "banana", `bytes must be a whole number from 0 to 1048576, got "banana"`},
		{"bytes", "+5", `bytes must be a whole number from 0 to 1048576, got "+5"`},
		{"bytes", "99999999999999999999", `bytes must be a whole number from 0 to 1048576, got "99999999999999999999"`},
		{"delay", "soon", `delay must be a duration such as 250ms, 2s or 1m30s, got "soon"`},
		{"every", "5", `every must be a duration such as 250ms, 2s or 1m30s, got "5"`},
		{"max", "1y", `max must be a duration such as 250ms, 2s or 1m30s, got "1y"`},
		{"fail-on", "x", `fail-on must be a whole number between 1 and 65535, got "x"`},
		{"stall", "yes", `stall: unknown boolean "yes", want 1, true, 0 or false`},
	} {
		_, err := ParseBehaviour("/x", url.Values{tt.key: {tt.value}})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: got %v, want %q", tt.key, tt.value, err, tt.want)
		}
		for _, internal := range []string{"strconv", "time:", "invalid syntax", "parsing"} {
			if err != nil && strings.Contains(err.Error(), internal) {
				t.Errorf("%s=%s: %q shows Go's %q", tt.key, tt.value, err, internal)
			}
		}
	}
	if n, err := parseCount(url.Values{"bytes": {"1048576"}}, "bytes", 0, MaxBytes); err != nil || n != MaxBytes {
		t.Errorf("bytes=1048576: got %d, %v", n, err)
	}
}
