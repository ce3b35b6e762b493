package labtest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
)

// Scenario is what the fake server does with a call; the constructors below make one.
type Scenario struct {
	// Name says what the scenario is, for rows and failure messages.
	Name string

	method     string
	path       string
	reserves   bool // the server counts reservations: executions are reservations
	downstream model.Downstream
	// modelled is false for the scenarios the model does not time.
	modelled bool
	err      error
}

// behaviour makes the scenario of b, refused here if the server would answer 400.
func behaviour(name, method string, b fakesrv.Behaviour) Scenario {
	s := Scenario{
		Name: name, method: method, path: b.Path(), reserves: b.Order != "", modelled: true,
		downstream: model.Downstream{Delay: b.Delay, Stall: b.Stall, Bytes: b.Bytes, Every: b.Every, Idempotent: b.Idempotent},
	}
	u, err := url.Parse(s.path)
	if err == nil {
		_, err = fakesrv.ParseBehaviour(u.Path, u.Query())
	}
	if err != nil {
		s.err = invalid("%s: %v", name, err)
	}
	return s
}

// Trickle answers the head at once, then a body byte every every: a read timeout per read
// never fires; only a deadline bounds the call.
func Trickle(bytes int, every time.Duration) Scenario {
	return behaviour("trickle "+strconv.Itoa(bytes)+" B every "+every.String(), http.MethodGet,
		fakesrv.Behaviour{Bytes: bytes, Every: every})
}

// Stall never answers (until the client leaves, or max when max > 0).
func Stall(max time.Duration) Scenario {
	return behaviour("stall", http.MethodGet, fakesrv.Behaviour{Stall: true, MaxStall: max})
}

// Slow answers after delay.
func Slow(delay time.Duration) Scenario {
	return behaviour("slow "+delay.String(), http.MethodGet, fakesrv.Behaviour{Delay: delay})
}

// Reserve is a POST that reserves on arrival and answers after delay: a client that gives up
// and retries makes the server reserve again.
func Reserve(delay time.Duration) Scenario {
	return behaviour("reserve, server "+delay.String(), http.MethodPost,
		fakesrv.Behaviour{Delay: delay, Order: "labtest-order"})
}

// IdempotentReserve is Reserve against a server that deduplicates by order id.
func IdempotentReserve(delay time.Duration) Scenario {
	return behaviour("idempotent reserve, server "+delay.String(), http.MethodPost,
		fakesrv.Behaviour{Delay: delay, Order: "labtest-order", Idempotent: true})
}

// CloseAfterRead closes the connection unanswered after reading the request, as a pooled
// connection that died; a client that re-sends shows more than one request.
func CloseAfterRead(method string) Scenario {
	s := Scenario{Name: method + " closed after read", method: method, path: "/close-after-read"}
	if !validMethod(method) {
		s.err = invalid("CloseAfterRead: method %q is not an HTTP method name", method)
	}
	return s
}

// validMethod reports whether m is an HTTP token (RFC 9110 section 5.6.2).
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c > '~' || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// RedirectLoop answers 302 to itself: the client's redirect limit ends the call.
func RedirectLoop() Scenario {
	return Scenario{Name: "redirect loop", method: http.MethodGet, path: "/redirect-loop"}
}
