//go:build race

package testenv

// race is true under the race detector, whose slowed hand-offs void a timing verdict.
const race = true
