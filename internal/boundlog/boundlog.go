// Package boundlog is a fake server's log for /stats: its newest entries within a count and a
// byte bound.
package boundlog

// Log keeps entries of type T; its owner's lock guards it.
type Log[T any] struct {
	limit, byteLimit int

	entries []entry[T]
	bytes   int
	dropped int
}

type entry[T any] struct {
	v    T
	size int
}

// New returns a log of at most limit entries and byteLimit bytes (0: no bound).
func New[T any](limit, byteLimit int) *Log[T] {
	return &Log[T]{limit: limit, byteLimit: byteLimit}
}

// Add appends v of size bytes; past a bound, the oldest go, down to half of each bound.
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
		clear(l.entries[kept:])
		l.entries = l.entries[:kept]
		l.dropped += n
	}
	l.entries = append(l.entries, entry[T]{v, size})
	l.bytes += size
}

// Each calls f on the entries, oldest first, until f returns false.
func (l *Log[T]) Each(f func(T) bool) {
	for _, e := range l.entries {
		if !f(e.v) {
			return
		}
	}
}

// Backward is Each, newest first.
func (l *Log[T]) Backward(f func(T) bool) {
	for i := len(l.entries) - 1; i >= 0; i-- {
		if !f(l.entries[i].v) {
			return
		}
	}
}

// Len returns the entries kept and their bytes.
func (l *Log[T]) Len() (entries, bytes int) { return len(l.entries), l.bytes }

// Dropped returns the entries dropped since New or Reset.
func (l *Log[T]) Dropped() int { return l.dropped }

// Reset empties the log.
func (l *Log[T]) Reset() {
	l.entries, l.bytes, l.dropped = nil, 0, 0
}
