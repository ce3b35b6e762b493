package fakesrv

import (
	"maps"
	"sync"
	"time"
)

// ledger is the server's book of reservations: how many were committed per order id, and
// when the first reservation of each order answers (for idempotent duplicates).
type ledger struct {
	maxOrders int // distinct order ids kept; set once by New

	mu          sync.Mutex           // guards counts, firstAnswer, total and refused
	counts      map[string]int       // committed reservations per order id
	firstAnswer map[string]time.Time // per order id: when its first reservation answers
	total       int
	refused     int // reservations of new order ids refused because maxOrders were known
}

// newLedger returns an empty ledger that keeps at most maxOrders distinct order ids.
func newLedger(maxOrders int) *ledger {
	return &ledger{maxOrders: maxOrders, counts: make(map[string]int), firstAnswer: make(map[string]time.Time)}
}

// reserve commits a reservation for order on arrival and returns when it must be answered:
// at answerAt for a counted reservation, or, for an idempotent duplicate, at the first
// reservation's answer time (never later than answerAt's cap, since the first arrived earlier).
// A new order id when maxOrders are known is refused (full), and nothing is reserved.
func (l *ledger) reserve(order string, idempotent bool, answerAt time.Time) (at time.Time, duplicate, full bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, seen := l.firstAnswer[order]
	if idempotent && seen {
		return first, true, false
	}
	if !seen && len(l.firstAnswer) >= l.maxOrders {
		l.refused++
		return time.Time{}, false, true
	}
	l.counts[order]++
	l.total++
	if !seen {
		l.firstAnswer[order] = answerAt
	}
	return answerAt, false, false
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

// snapshot returns a copy of the counts per order, their total and the refused
// reservations.
func (l *ledger) snapshot() (counts map[string]int, total, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts), l.total, l.refused
}

// reset forgets every reservation.
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts = make(map[string]int)
	l.firstAnswer = make(map[string]time.Time)
	l.total = 0
	l.refused = 0
}
