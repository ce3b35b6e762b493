// Command labrun reproduces, measures and regression-tests how HTTP clients behave when the
// server is slow, stuck or trickling: which timeout fires, when, and what the server did
// meanwhile. See README.md; the command line itself lives in internal/cli.
package main

import (
	"os"

	"github.com/labrun/labrun/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
