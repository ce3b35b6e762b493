//go:build race

package testenv

// race is true when the race detector is on: it slows every goroutine hand-off several times
// over, so a timing verdict means nothing under it.
const race = true
