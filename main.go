// Command labrun reproduces, measures and regression-tests how HTTP clients behave when the
// server is slow, stuck or trickling: which timeout fires, when, and what the server did
// meanwhile. See README.md.
package main

import "os"

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }
