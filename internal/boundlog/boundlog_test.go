package boundlog

import "testing"

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		limit, byteLimit int
		size             int
		wantMax          int // entries never above
		wantMaxBytes     int
	}{
		{"count", 100, 0, 10, 100, 1000},
		{"bytes", 0, 1000, 10, 100, 1000},
		{"both", 100, 500, 10, 50, 500},
		{"an entry above the byte bound", 100, 5, 10, 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New[int](tc.limit, tc.byteLimit)
			for i := range 10_000 {
				l.Add(i, tc.size)
				n, b := l.Len()
				if n > tc.wantMax || b > tc.wantMaxBytes || n == 0 {
					t.Fatalf("after %d adds: %d entries, %d bytes; want 1 to %d entries, at most %d bytes", i+1, n, b, tc.wantMax, tc.wantMaxBytes)
				}
			}
			n, _ := l.Len()
			if got := l.Dropped() + n; got != 10_000 {
				t.Errorf("dropped + kept = %d, want 10000", got)
			}
			last := -1
			l.Backward(func(v int) bool { last = v; return false })
			if last != 9999 {
				t.Errorf("newest %d, want 9999", last)
			}
		})
	}
}

func TestReset(t *testing.T) {
	l := New[string](2, 0)
	for _, s := range []string{"a", "b", "c"} {
		l.Add(s, 1)
	}
	l.Reset()
	if n, b := l.Len(); n != 0 || b != 0 || l.Dropped() != 0 {
		t.Errorf("after Reset: %d entries, %d bytes, %d dropped; want none", n, b, l.Dropped())
	}
	var got []string
	l.Add("d", 1)
	l.Each(func(s string) bool { got = append(got, s); return true })
	if len(got) != 1 || got[0] != "d" {
		t.Errorf("got %v, want [d]", got)
	}
}
