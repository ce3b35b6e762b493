package grpcsrv

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestParseFault(t *testing.T) {
	const max = time.Minute
	for _, tc := range []struct {
		in      string
		want    Fault
		wantErr string
	}{
		{"", Fault{}, ""},
		{"work=1s,ignore-ctx", Fault{Work: time.Second, IgnoreCtx: true}, ""},
		{" unavailable , ok-on=2, pushback=50ms", Fault{Unavailable: true, Status: codes.Unavailable, OKOn: 2, Pushback: 50 * time.Millisecond}, ""},
		{"unavailable,pushback=stop", Fault{Unavailable: true, Status: codes.Unavailable, PushbackStop: true}, ""},
		{"every=400ms,messages=3", Fault{Every: 400 * time.Millisecond, Messages: 3}, ""},
		{"refuse=1", Fault{Refuse: 1}, ""},
		{"goaway=2", Fault{GoAway: 2}, ""},
		{"freeze", Fault{Freeze: true}, ""},
		{"work=100ms,next=pass", Fault{Work: 100 * time.Millisecond, NextPass: true}, ""},
		{"next=2s", Fault{NextOwn: 2 * time.Second}, ""},
		{"work=soon", Fault{}, `work="soon": not a duration such as 250ms`},
		{"work=-1s", Fault{}, "work=-1s: must not be negative"},
		{"work=2m", Fault{}, "work=2m0s: above the server's max duration 1m0s"},
		{"refuse=0", Fault{}, `refuse="0": want a count from 1 to 1000`},
		{"hang=1", Fault{}, `hang takes no value, got "hang=1"`},
		{"sleep=1s", Fault{}, `unknown item "sleep" (want work, hang, ignore-ctx, unavailable, status, ok-on, pushback, messages, every, refuse, goaway, freeze or next)`},
		{"ok-on=2", Fault{}, "ok-on and pushback need unavailable or status"},
		{"hang,unavailable", Fault{}, "hang never answers: it takes no unavailable, status or next"},
		{"next=pass,unavailable", Fault{}, "a chain hop answers what its downstream answered: no unavailable or status"},
		{"status=RESOURCE_EXHAUSTED,ok-on=3", Fault{Status: codes.ResourceExhausted, OKOn: 3}, ""},
		{"status=cancelled", Fault{Status: codes.Canceled}, ""},
		{"status=14,unavailable", Fault{Unavailable: true, Status: codes.Unavailable}, ""},
		{"status=16", Fault{Status: codes.Unauthenticated}, ""},
		{"status=OK", Fault{}, `status="OK": want a code from 1 to 16 or its name, such as RESOURCE_EXHAUSTED`},
		{"status=17", Fault{}, `status="17": want a code from 1 to 16 or its name, such as RESOURCE_EXHAUSTED`},
		{"status=ABORTED,unavailable", Fault{}, "unavailable and status=ABORTED: choose one"},
		{"hang,status=INTERNAL", Fault{}, "hang never answers: it takes no unavailable, status or next"},
		{"next=0s", Fault{}, "next=0s: want pass or a positive duration"},
	} {
		got, err := ParseFault(tc.in, max)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("ParseFault(%q): got %+v, %q; want %+v, %q", tc.in, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func TestDecodeTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"299986u", 299986 * time.Microsecond, true}, {"301m", 301 * time.Millisecond, true}, {"1S", time.Second, true},
		{"", 0, false}, {"m", 0, false}, {"10x", 0, false}, {"-1m", 0, false}, {"123456789m", 0, false},
	} {
		got, ok := decodeTimeout(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("decodeTimeout(%q): got %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
