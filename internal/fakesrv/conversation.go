package fakesrv

import "sync"

// conversations counts the requests of each conversation id that /flaky has seen since the
// last reset, so that a request sent again (the same URL, the same id) can be answered
// differently from the first: 408 to the first, 200 to the second.
type conversations struct {
	limit int // distinct ids kept; set once by newConversations

	mu   sync.Mutex // guards seen
	seen map[string]int
}

// newConversations returns an empty book that keeps at most limit distinct ids.
func newConversations(limit int) *conversations {
	return &conversations{limit: limit, seen: make(map[string]int)}
}

// next counts a request of conversation id and returns its 1-based number in the
// conversation; false when id is new and limit ids are known already (nothing is counted).
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

// reset forgets every conversation.
func (c *conversations) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.seen)
}
