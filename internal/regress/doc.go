// Package regress holds deliberate regressions of labrun's client, off unless labrun is built
// with their tag, so that a test can check that the timing gate catches them (the gate's
// teeth, docs/ci.md). Each is a constant: off, the compiler drops the code it guards.
package regress
