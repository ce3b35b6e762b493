package fakesrv

import (
	"fmt"
	"net/url"
	"testing"
	"time"
)

func TestBehaviourPathRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		b    Behaviour
		want string
	}{
		{"zero", Behaviour{}, "/delay"},
		{"delay", Behaviour{Delay: 500 * time.Millisecond}, "/delay?delay=500ms"},
		{"body at once", Behaviour{Delay: 5 * time.Millisecond, Bytes: 3}, "/delay?bytes=3&delay=5ms"},
		{"trickle", Behaviour{Bytes: 10, Every: 400 * time.Millisecond}, "/trickle?bytes=10&every=400ms"},
		{"stall", Behaviour{Stall: true}, "/stall"},
		{"stall with a cap", Behaviour{Stall: true, MaxStall: 2 * time.Second}, "/stall?max=2s"},
		{"stall with trickle fields", Behaviour{Stall: true, Bytes: 2, Every: time.Second}, "/stall?bytes=2&every=1s"},
		{"reserve", Behaviour{Delay: 500 * time.Millisecond, Order: "42"}, "/reserve?delay=500ms&order=42"},
		{"reserve idempotent", Behaviour{Order: "42", Idempotent: true}, "/reserve?idempotent=1&order=42"},
		{"reserve stalled", Behaviour{Order: "a b&c", Stall: true}, "/reserve?order=a+b%26c&stall=1"},
		{"long delay", Behaviour{Delay: 90 * time.Second}, "/delay?delay=1m30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Path()
			if got != tt.want {
				t.Fatalf("Path() = %q, want %q", got, tt.want)
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatalf("url.Parse(%q): %v", got, err)
			}
			back, err := ParseBehaviour(u.Path, u.Query())
			if err != nil {
				t.Fatalf("ParseBehaviour(%q): %v", got, err)
			}
			if back != tt.b {
				t.Errorf("round trip: got %+v, want %+v", back, tt.b)
			}
		})
	}
}

func TestParseBehaviour(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		query   string
		want    Behaviour
		wantErr string
	}{
		{name: "empty", path: "/", want: Behaviour{}},
		{name: "any path", path: "/whatever/else", query: "delay=1s", want: Behaviour{Delay: time.Second}},
		{name: "stall path", path: "/stall", want: Behaviour{Stall: true}},
		{name: "stall query", path: "/x", query: "stall=true", want: Behaviour{Stall: true}},
		{name: "stall false", path: "/x", query: "stall=0", want: Behaviour{}},
		{name: "empty value is absent", path: "/x", query: "delay=&bytes=&stall=", want: Behaviour{}},
		{name: "unknown key ignored", path: "/x", query: "colour=red&bytes=4", want: Behaviour{Bytes: 4}},
		{name: "every without bytes", path: "/trickle", query: "every=1s", want: Behaviour{Every: time.Second}},
		{name: "max bytes", path: "/x", query: "bytes=1048576", want: Behaviour{Bytes: MaxBytes}},
		{
			name: "all", path: "/reserve", query: "delay=2ms&bytes=1&every=3ms&order=7&idempotent=false",
			want: Behaviour{Delay: 2 * time.Millisecond, Bytes: 1, Every: 3 * time.Millisecond, Order: "7"},
		},
		{name: "bad delay", path: "/x", query: "delay=x", wantErr: `delay must be a duration such as 250ms, 2s or 1m30s, got "x"`},
		{name: "negative delay", path: "/x", query: "delay=-1s", wantErr: "delay must not be negative, got -1s"},
		{name: "stall cap", path: "/stall", query: "max=150ms&call=3", want: Behaviour{Stall: true, MaxStall: 150 * time.Millisecond}},
		{name: "bad max", path: "/stall", query: "max=long", wantErr: `max must be a duration such as 250ms, 2s or 1m30s, got "long"`},
		{name: "negative max", path: "/stall", query: "max=-1ms", wantErr: "max must not be negative, got -1ms"},
		{name: "bad every", path: "/x", query: "every=5", wantErr: `every must be a duration such as 250ms, 2s or 1m30s, got "5"`},
		{name: "negative every", path: "/x", query: "every=-1s", wantErr: "every must not be negative, got -1s"},
		{name: "bad bytes", path: "/x", query: "bytes=ten", wantErr: `bytes must be a whole number from 0 to 1048576, got "ten"`},
		{name: "negative bytes", path: "/x", query: "bytes=-1", wantErr: `bytes must be a whole number from 0 to 1048576, got "-1"`},
		{name: "too many bytes", path: "/x", query: "bytes=1048577", wantErr: `bytes must be a whole number from 0 to 1048576, got "1048577"`},
		{name: "bad stall", path: "/x", query: "stall=yes", wantErr: `stall: unknown boolean "yes", want 1, true, 0 or false`},
		{name: "bad idempotent", path: "/x", query: "idempotent=2", wantErr: `idempotent: unknown boolean "2", want 1, true, 0 or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatalf("ParseQuery(%q): %v", tt.query, err)
			}
			got, err := ParseBehaviour(tt.path, q)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error: got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func ExampleBehaviour_Path() {
	fmt.Println(Behaviour{Delay: 500 * time.Millisecond, Order: "42"}.Path())
	fmt.Println(Behaviour{Bytes: 10, Every: 400 * time.Millisecond}.Path())
	fmt.Println(Behaviour{Stall: true}.Path())
	fmt.Println(Behaviour{Delay: 5 * time.Millisecond}.Path())
	// Output:
	// /reserve?delay=500ms&order=42
	// /trickle?bytes=10&every=400ms
	// /stall
	// /delay?delay=5ms
}
