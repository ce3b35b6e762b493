package experiments

import (
	"context"
	"fmt"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/results"
)

// Trickle is experiment A: a server that answers its head at once and then trickles its body
// never trips a read timeout, because the read timeout restarts on every byte; only a deadline
// bounds the call. A control row shows the read timeout firing against a silent server.
type Trickle struct {
	ReadTimeout time.Duration
	Deadline    time.Duration
	Bytes       int
	Every       time.Duration
	// Silence is how long the control row's server stays silent before answering.
	Silence time.Duration
}

// NewTrickle returns experiment A with its documented parameters: 10 bytes one every 400 ms,
// read timeout 1 s, deadline 1.5 s, control server silent 3 s.
func NewTrickle() *Trickle {
	return &Trickle{
		ReadTimeout: time.Second,
		Deadline:    1500 * time.Millisecond,
		Bytes:       10,
		Every:       400 * time.Millisecond,
		Silence:     3 * time.Second,
	}
}

// Info implements Experiment.
func (*Trickle) Info() Info {
	return Info{
		Name:  "exp-a",
		Topic: "trickle",
		Title: "a trickle vs the read timeout",
		Description: "The server sends its head at once, then the body one byte at a time. The read timeout " +
			"(SO_TIMEOUT) restarts on every byte, so it never fires: the call succeeds after " +
			"bytes x every. Only a total deadline bounds the call. A control row shows the read " +
			"timeout firing against a server that stays silent. Two rows trickle with gaps longer " +
			"than the read timeout: a read timeout per read fires in the first, and the JDK " +
			"HttpClient's HttpRequest.timeout(), which ends when the head arrives, never does.",
		Examples: []string{
			"labrun exp-a",
			"labrun exp-a --every 900ms      # gaps still shorter than the read timeout: ok",
			"labrun exp-a --every 1.2s      # one gap longer than the read timeout: it fires",
			"labrun exp-a --format json",
		},
	}
}

// minClientLimit is the shortest client limit exp-a takes: its warm-up call, on loopback,
// must end within the read timeout, and takes a few milliseconds on a loaded machine.
const minClientLimit = 10 * time.Millisecond

// Params implements Experiment.
func (t *Trickle) Params() []Param {
	return []Param{
		{Name: "read-timeout", Usage: "client read timeout, idle per read (0 = none)", Duration: &t.ReadTimeout, MinDuration: minClientLimit},
		{Name: "deadline", Usage: "total deadline of the second row's call", Duration: &t.Deadline, MinDuration: minClientLimit},
		{Name: "bytes", Usage: "body bytes the server trickles", Int: &t.Bytes, Min: 1, Max: fakesrv.MaxBytes},
		{Name: "every", Usage: "pause before each trickled byte", Duration: &t.Every},
		{Name: "silence", Usage: "how long the control row's server stays silent", Duration: &t.Silence},
	}
}

// Run implements Experiment.
func (t *Trickle) Run(ctx context.Context, opt Options) (results.Run, error) {
	return serverRun(t, opt, func(run *results.Run, srv *fakesrv.Server) error {
		trickle := fakesrv.Behaviour{Bytes: t.Bytes, Every: t.Every}
		silent := fakesrv.Behaviour{Delay: t.Silence}
		noDeadline := lab.Spec{ReadTimeout: t.ReadTimeout}
		withDeadline := lab.Spec{ReadTimeout: t.ReadTimeout, Deadline: t.Deadline}
		def := atDocumented(opt, t.Params(), NewTrickle().Params())
		doc := func(f figure) []lab.Judge {
			text, ms := documented(def, f)
			return []lab.Judge{lab.Documented(text, ms, nil)}
		}
		cases := []callCase{
			{Name: fmt.Sprintf("trickle %d B x %v, read timeout %v", t.Bytes, t.Every, t.ReadTimeout),
				Limits: noDeadline, Behaviour: trickle, Also: doc(figure{"4091 ms, ok", 4091})},
			{Name: fmt.Sprintf("same, deadline %v", t.Deadline),
				Limits: withDeadline, Behaviour: trickle, Also: doc(figure{"1500 ms, deadline", 1500})},
			{Name: fmt.Sprintf("control: silent %v, read timeout %v", t.Silence, t.ReadTimeout),
				Limits: noDeadline, Behaviour: silent},
		}
		if t.ReadTimeout > 0 {
			// Gaps longer than the read timeout: a read timeout per read fires in the first one;
			// the JDK's HttpRequest.timeout() ended with the head and never does.
			long := fakesrv.Behaviour{Bytes: 2, Every: t.ReadTimeout + t.ReadTimeout/2}
			cases = append(cases, callCase{Name: fmt.Sprintf("gaps longer: trickle 2 B x %v, read timeout %v", long.Every, t.ReadTimeout),
				Limits: noDeadline, Behaviour: long})
			if opt.profile() != ProfileJDK {
				cases = append(cases, callCase{Name: fmt.Sprintf("the same under jdk: HttpRequest.timeout(%v) ends at the head", t.ReadTimeout),
					Limits: noDeadline, Behaviour: long, Profile: ProfileJDK})
			}
		}
		for i := range cases {
			cases[i].Server = srv
		}
		return runCases(ctx, opt, run, cases, len(cases))
	})
}
