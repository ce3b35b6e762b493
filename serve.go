package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/fakesrv"
)

// shutdownGrace is how long labrun serve lets requests in flight finish after SIGINT/SIGTERM
// before it cuts them.
const shutdownGrace = 5 * time.Second

// serveLogLimit bounds the request log of a long-running labrun serve; /stats counts all.
const serveLogLimit = 10000

// endpoints is the URL grammar labrun serve prints on stderr.
const endpoints = `endpoints:
  GET|POST /reserve?order=ID&delay=DUR[&idempotent=1]   reservation, committed on arrival; honours X-Deadline-Ms
  GET  /trickle?bytes=N&every=DUR[&delay=DUR]          head after delay, then one byte every DUR
  GET  /stall[?max=DUR]                                 never answers until the client leaves (or max)
  GET  /delay?delay=DUR                                 answers after DUR
  ANY  /status/CODE[?retry-after=VALUE][&delay=DUR]     answers CODE, with Retry-After
  GET  /redirect-loop                                   302 to itself, forever
  GET  /redirect/N                                      N redirects, then 200
  ANY  /close-after-read                                reads the request, closes without answering
  ANY  /reset                                           reads the request, resets the connection (RST)
  GET  /stats, POST /stats/reset                        counters as JSON; zero them
`

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the fault server for HTTP clients in any language",
		Description: "Serves labrun's fake server until SIGINT or SIGTERM, then shuts down " +
			"gracefully. The base URL goes to stdout (one line, for scripts), the endpoint list " +
			"to stderr. It binds loopback only unless --allow-remote is given, and every " +
			"duration a request asks for is capped by --max-duration.\n\n" + endpoints + "\n" +
			"Examples:\n   labrun serve\n   labrun serve --addr 127.0.0.1:8080\n" +
			"   url=$(labrun serve 2>/dev/null &)   # in a script: read the URL from stdout",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "listen address (port 0: any free port)"},
			&cli.BoolFlag{Name: "allow-remote", Usage: "allow a listen address that is not loopback"},
			&cli.DurationFlag{Name: "max-duration", Value: fakesrv.DefaultMaxDuration, Usage: "cap on every delay, stall and trickle"},
			&cli.BoolFlag{Name: "idempotent", Usage: "deduplicate every reservation by order id"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("serve takes no arguments, got %q", c.Args().First())
			}
			if d := c.Duration("max-duration"); d <= 0 {
				return usagef("--max-duration must be positive, got %v", d)
			}
			srv, err := fakesrv.New(
				fakesrv.WithAddr(c.String("addr")),
				fakesrv.WithAllowRemote(c.Bool("allow-remote")),
				fakesrv.WithMaxDuration(c.Duration("max-duration")),
				fakesrv.WithIdempotent(c.Bool("idempotent")),
				fakesrv.WithLogLimit(serveLogLimit),
			)
			if err != nil {
				return usageError{fmt.Errorf("--addr: %w", err)}
			}
			fmt.Fprintln(c.App.Writer, srv.URL)
			fmt.Fprintf(c.App.ErrWriter, "labrun: serving on %s until Ctrl-C\n%s", srv.URL, endpoints)
			<-c.Context.Done()
			ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "labrun: requests still in flight after %v were cut\n", shutdownGrace)
			}
			fmt.Fprintln(c.App.ErrWriter, "labrun: stopped")
			return nil
		},
	}
}
