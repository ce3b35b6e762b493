package results

import "testing"

// TestSummarizeMedianWithinRange: the median, rounded to two decimals, never leaves the
// unrounded [min, max] (299.992 and 299.993 once gave a median of 299.99, which the reader
// refused as out of order).
func TestSummarizeMedianWithinRange(t *testing.T) {
	st, err := Summarize([]float64{299.992, 299.993})
	if err != nil {
		t.Fatal(err)
	}
	if st.MedianMs < st.MinMs || st.MedianMs > st.MaxMs {
		t.Errorf("median %g outside [%g, %g]", st.MedianMs, st.MinMs, st.MaxMs)
	}
}
