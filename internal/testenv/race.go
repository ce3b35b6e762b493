//go:build race

package testenv

// race reports the race detector.
const race = true
