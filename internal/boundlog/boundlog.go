// Package boundlog is the log a long-running fake server keeps for /stats: its newest
// entries within a bound on their count and one on their bytes, as each entry is counted.
package boundlog

// Log keeps entries of type T. It has no lock: its owner's guards it.
type Log[T any] struct {
	limit, byteLimit int // 0: no bound

	entries []entry[T]
	bytes   int // the sum of the entries' sizes
	dropped int
}

type entry[T any] struct {
	v    T
	size int
}

// New returns an empty log keeping at most limit entries and byteLimit bytes (0: no bound).
func New[T any](limit, byteLimit int) *Log[T] {
	return &Log[T]{limit: limit, byteLimit: byteLimit}
}

// Add appends v, counted as size bytes. When a bound would be passed, the oldest entries go
// down to half of each bound at once rather than one per Add: amortised O(1).
func (l *Log[T]) Add(v T, size int) {
	overCount := l.limit > 0 && len(l.entries) >= l.limit
	overBytes := l.byteLimit > 0 && l.bytes+size > l.byteLimit
	if overCount || overBytes {
		n := 0
		for n < len(l.entries) &&
			((l.limit > 0 && len(l.entries)-n > l.limit/2) || (l.byteLimit > 0 && l.bytes+size > l.byteLimit/2)) {
			l.bytes -= l.entries[n].size
			n++
		}
		kept := copy(l.entries, l.entries[n:])
		clear(l.entries[kept:]) // no stale entry stays reachable
		l.entries = l.entries[:kept]
		l.dropped += n
	}
	l.entries = append(l.entries, entry[T]{v, size})
	l.bytes += size
}

// Each calls f on every entry kept, oldest first, until f returns false.
func (l *Log[T]) Each(f func(T) bool) {
	for _, e := range l.entries {
		if !f(e.v) {
			return
		}
	}
}

// Backward is Each from the newest entry.
func (l *Log[T]) Backward(f func(T) bool) {
	for i := len(l.entries) - 1; i >= 0; i-- {
		if !f(l.entries[i].v) {
			return
		}
	}
}

// Len returns the entries kept and the bytes they are counted for.
func (l *Log[T]) Len() (entries, bytes int) { return len(l.entries), l.bytes }

// Dropped returns the entries dropped to keep the bounds since New or Reset.
func (l *Log[T]) Dropped() int { return l.dropped }

// Reset empties the log.
func (l *Log[T]) Reset() {
	l.entries, l.bytes, l.dropped = nil, 0, 0
}
