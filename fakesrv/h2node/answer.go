package h2node

import (
	"container/heap"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// schedule is a connection's answers to come, earliest due first: each is due when its request
// completed plus its latency, and one goroutine (answerLoop) writes all that is due in one
// flush, its timer paired with a clock.Alarm (docs/http2.md).

type schedule struct {
	mu   sync.Mutex
	h    dueHeap
	seq  uint64
	kick chan struct{} // capacity 1: the earliest due may have changed
}

func newSchedule() *schedule { return &schedule{kick: make(chan struct{}, 1)} }

func (s *schedule) add(st *stream) {
	s.mu.Lock()
	st.seq = s.seq
	s.seq++
	heap.Push(&s.h, st)
	first := s.h[0] == st
	s.mu.Unlock()
	if first {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

func (s *schedule) remove(st *stream) {
	s.mu.Lock()
	if st.index >= 0 && st.index < len(s.h) && s.h[st.index] == st {
		heap.Remove(&s.h, st.index)
	}
	s.mu.Unlock()
}

// due takes the answers due by now, in order, and returns the next due instant (zero: none).
func (s *schedule) due(now time.Time) (batch []*stream, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.h) > 0 && !s.h[0].due.After(now) {
		batch = append(batch, heap.Pop(&s.h).(*stream))
	}
	if len(s.h) > 0 {
		next = s.h[0].due
	}
	return batch, next
}

// dueHeap orders streams by due instant, then scheduling order.
type dueHeap []*stream

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	st := x.(*stream)
	st.index = len(*h)
	*h = append(*h, st)
}
func (h *dueHeap) Pop() any {
	old := *h
	st := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	st.index = -1
	return st
}

func (c *conn) answerLoop() {
	defer c.n.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var alarm clock.Alarm
	defer alarm.Stop()
	for {
		batch, next := c.sched.due(time.Now())
		if len(batch) > 0 {
			if !c.answer(batch) {
				return
			}
			continue
		}
		var fire <-chan time.Time
		if !next.IsZero() {
			t.Reset(time.Until(next))
			alarm.Set(next)
			fire = t.C
		}
		select {
		case <-fire:
		case <-c.sched.kick:
		case <-c.closed:
			return
		}
	}
}

// answer writes batch's open answers in one flush (with the throttle's SETTINGS); false once
// the connection closed.
func (c *conn) answer(batch []*stream) bool {
	if !c.n.awaitThaw(c.closed) {
		return false
	}
	err := c.write(func() error {
		// Under the write lock, so no SETTINGS changing windows comes between end and answer.
		for _, st := range batch {
			if !c.end(st, st.status) {
				continue
			}
			if err := c.writeAnswerLocked(st); err != nil {
				return err
			}
			if !c.n.opts.throttle {
				continue
			}
			if limit := c.throttle(st.status); limit > 0 {
				if err := c.writeLimitLocked(limit); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		c.close()
		return false
	}
	return true
}

// writeAnswerLocked writes HEADERS, and DATA once the windows allow (sendBlockedLocked).
func (c *conn) writeAnswerLocked(st *stream) error {
	c.hbuf.Reset()
	fields := []hpack.HeaderField{
		{Name: ":status", Value: strconv.Itoa(st.status)},
		{Name: "content-type", Value: "text/plain; charset=utf-8"},
		{Name: "content-length", Value: strconv.Itoa(len(st.body))},
		{Name: "x-h2node-conn", Value: strconv.Itoa(c.id)},
	}
	for _, hf := range fields {
		if err := c.henc.WriteField(hf); err != nil {
			return err
		}
	}
	err := c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: st.id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: len(st.body) == 0,
	})
	if err != nil || len(st.body) == 0 {
		return err
	}
	st.pending = st.body
	c.blocked = append(c.blocked, st)
	return c.sendBlockedLocked()
}
