package fakesrv

import (
	"maps"
	"sync"
	"time"
)

// ledger counts the reservations per order id, and when each order's first one answers.
type ledger struct {
	maxOrders int // distinct order ids kept; set once by New

	mu          sync.Mutex           // guards counts, firstAnswer, total and refused
	counts      map[string]int       // committed reservations per order id
	firstAnswer map[string]time.Time // per order id: when its first reservation answers
	total       int
	refused     int // reservations of new order ids refused because maxOrders were known
}

func newLedger(maxOrders int) *ledger {
	return &ledger{maxOrders: maxOrders, counts: make(map[string]int), firstAnswer: make(map[string]time.Time)}
}

// reserve commits a reservation on arrival and returns when to answer: answerAt, or an
// idempotent duplicate the first reservation's time. A new id beyond maxOrders is refused.
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

func (l *ledger) count(order string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[order]
}

func (l *ledger) totalCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// snapshot returns a copy of the counts per order, their total and the refusals.
func (l *ledger) snapshot() (counts map[string]int, total, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts), l.total, l.refused
}

func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts = make(map[string]int)
	l.firstAnswer = make(map[string]time.Time)
	l.total = 0
	l.refused = 0
}
