package testenv

import (
	"math/rand/v2"
	"testing"
)

// Mutations is the conformance tier's bounded stand-in for go test -fuzz (make fuzz): it calls
// fn with n inputs made from seeds by byte flips, insertions, cuts and splices, from a fixed
// random seed so that a failure repeats. It skips in the fast tier.
func Mutations(t *testing.T, seeds [][]byte, n int, fn func(t *testing.T, data []byte)) {
	t.Helper()
	Slow(t, "random inputs")
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		data := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(8) {
			switch at := r.IntN(len(data) + 1); r.IntN(4) {
			case 0:
				if at < len(data) {
					data[at] ^= byte(1 + r.IntN(255))
				}
			case 1:
				data = append(data[:at], append([]byte{byte(r.IntN(256))}, data[at:]...)...)
			case 2:
				data = data[:at]
			case 3:
				other := seeds[r.IntN(len(seeds))]
				data = append(data[:at], other[r.IntN(len(other)+1):]...)
			}
		}
		if !t.Run("", func(t *testing.T) { fn(t, data) }) {
			t.Fatalf("input %d failed: %q", i, data)
		}
	}
}
