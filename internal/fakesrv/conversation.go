package fakesrv

import "sync"

// conversations counts the requests of each /flaky id since the last reset, so a request sent
// again is answered differently from the first.
type conversations struct {
	limit int // distinct ids kept; set once by newConversations

	mu   sync.Mutex // guards seen
	seen map[string]int
}

func newConversations(limit int) *conversations {
	return &conversations{limit: limit, seen: make(map[string]int)}
}

// next counts a request of id and returns its number in the conversation; false for a new id
// beyond limit.
func (c *conversations) next(id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, known := c.seen[id]
	if !known && len(c.seen) >= c.limit {
		return 0, false
	}
	c.seen[id] = n + 1
	return n + 1, true
}

func (c *conversations) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.seen)
}
