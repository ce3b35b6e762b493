package fakesrv

import (
	"maps"
	"sync"
	"time"
)

// ledger is the server's book of reservations: how many were committed per order id, and
// when the first reservation of each order answers (for idempotent duplicates).
type ledger struct {
	mu          sync.Mutex           // guards counts, firstAnswer and total
	counts      map[string]int       // committed reservations per order id
	firstAnswer map[string]time.Time // per order id: when its first reservation answers
	total       int
}

// newLedger returns an empty ledger.
func newLedger() *ledger {
	return &ledger{counts: make(map[string]int), firstAnswer: make(map[string]time.Time)}
}

// reserve commits a reservation for order on arrival and returns when it must be answered:
// at answerAt for a counted reservation, or, for an idempotent duplicate, at the first
// reservation's answer time (never later than answerAt's cap, since the first arrived earlier).
func (l *ledger) reserve(order string, idempotent bool, answerAt time.Time) (at time.Time, duplicate bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, seen := l.firstAnswer[order]
	if idempotent && seen {
		return first, true
	}
	l.counts[order]++
	l.total++
	if !seen {
		l.firstAnswer[order] = answerAt
	}
	return answerAt, false
}

// count returns the reservations committed for order.
func (l *ledger) count(order string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[order]
}

// totalCount returns the reservations committed over all orders.
func (l *ledger) totalCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// snapshot returns a copy of the counts per order and their total.
func (l *ledger) snapshot() (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts), l.total
}

// reset forgets every reservation.
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts = make(map[string]int)
	l.firstAnswer = make(map[string]time.Time)
	l.total = 0
}
