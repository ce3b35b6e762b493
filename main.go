// Command labrun reproduces, measures and regression-tests how HTTP clients behave when the
// server is slow, stuck or trickling: which timeout fires, when, and what the server did
// meanwhile. See README.md.
package main

import (
	"os"

	"github.com/labrun/labrun/netns"
	"github.com/labrun/labrun/netns/vanish"
)

func main() {
	// A namespace child (exp-i's measurements of vanishing peers) is this same binary started
	// in a new user and network namespace: it runs its job and exits before anything else.
	if code, child := netns.MaybeChild(vanish.Jobs(), os.Stdin, os.Stdout, os.Stderr); child {
		os.Exit(code)
	}
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}
