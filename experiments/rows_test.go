package experiments

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

func TestGroupCalls(t *testing.T) {
	p := func(o vocab.Outcome, at time.Duration) model.Prediction {
		return model.Prediction{Outcome: o, Total: at}
	}
	preds := []model.Prediction{p(vocab.OK, 500*ms), p(vocab.LeaseTimeout, 300*ms), p(vocab.OK, 500*ms), p(vocab.OK, 1000*ms)}
	tests := []struct {
		name     string
		outcomes []vocab.Outcome
		ends     []time.Duration
		want     []group
	}{
		{
			name:     "as predicted",
			outcomes: []vocab.Outcome{vocab.OK, vocab.OK, vocab.LeaseTimeout, vocab.OK},
			ends:     []time.Duration{1001 * ms, 501 * ms, 301 * ms, 502 * ms},
			want: []group{
				{outcome: vocab.LeaseTimeout, at: 300 * ms, calls: []int{2}, want: 1},
				{outcome: vocab.OK, at: 500 * ms, calls: []int{1, 3}, want: 2},
				{outcome: vocab.OK, at: 1000 * ms, calls: []int{0}, want: 1},
			},
		},
		{
			name:     "an unexpected outcome",
			outcomes: []vocab.Outcome{vocab.OK, vocab.OK, vocab.OK, vocab.ReadTimeout},
			ends:     []time.Duration{500 * ms, 500 * ms, 1000 * ms, 200 * ms},
			want: []group{
				{outcome: vocab.LeaseTimeout, at: 300 * ms, calls: []int{}, want: 1},
				{outcome: vocab.OK, at: 500 * ms, calls: []int{0, 1}, want: 2},
				{outcome: vocab.OK, at: 1000 * ms, calls: []int{2}, want: 1},
				{outcome: vocab.ReadTimeout, at: -1, calls: []int{3}, want: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := groupCalls(preds, tt.outcomes, tt.ends)
			for i := range got {
				if got[i].calls == nil {
					got[i].calls = []int{}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	ends := []time.Duration{5, 1, 4, 2, 3}
	tests := []struct {
		idx  []int
		want time.Duration
	}{{[]int{0}, 5}, {[]int{0, 1}, 1}, {[]int{0, 1, 2}, 4}, {[]int{0, 1, 2, 3, 4}, 3}}
	for _, tt := range tests {
		if got := median(ends, tt.idx); got != tt.want {
			t.Errorf("median of %v: got %v, want %v", tt.idx, got, tt.want)
		}
	}
}

func TestDocumented(t *testing.T) {
	tests := []struct {
		name     string
		def      bool
		f        figure
		wantText string
		wantMs   any
	}{
		{"at defaults", true, figure{"4091 ms, ok", 4091}, "4091 ms, ok", 4091.0},
		{"a range", true, figure{"2100-2200 ms", 0}, "2100-2200 ms", "-"},
		{"other parameters", false, figure{"4091 ms, ok", 4091}, "", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, ms := documented(tt.def, tt.f)
			if text != tt.wantText || deref(ms) != tt.wantMs {
				t.Errorf("got %q, %v; want %q, %v", text, deref(ms), tt.wantText, tt.wantMs)
			}
		})
	}
}
