package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/urfave/cli/v2"
)

// How a started labrun serve ends: announced, stopped by a signal, gracefully then at once.

// stopSignals are the signals that stop labrun serve. run's context catches SIGINT and
// SIGTERM; serve catches SIGHUP (a closed terminal) and SIGQUIT as well, which would
// otherwise kill the process before it removes its files (--url-file, --h2's temporary CA).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// serveUntilStopped is the life of a started labrun serve: it announces the URLs (urls on
// stdout in one write, so that a script reading it gets them whole, and in --url-file; the
// banner on stderr), waits for a stop signal, then stops gracefully with shutdown, which
// stops what serves "what" (requests, streams): fakesrv.Server.Shutdown or
// h2node.Cluster.Shutdown. Whatever happens, it removes --url-file before it returns, and
// shutdown has been called.
func serveUntilStopped(c *cli.Context, urls, banner, what string, shutdown func(context.Context) error) error {
	// Registered before the URLs are out: a script that signals as soon as it read them
	// must find the signal handled.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(hup)
	if path := c.String("url-file"); path != "" {
		defer os.Remove(path) // best effort; the file was ours
		if err := writeAtomic(path, []byte(urls)); err != nil {
			_ = shutdown(cancelled())
			return fmt.Errorf("--url-file: %w", err)
		}
	}
	fmt.Fprint(c.App.Writer, urls)
	fmt.Fprint(c.App.ErrWriter, banner)
	select {
	case <-c.Context.Done():
	case <-hup:
	}
	return stopGracefully(c.App.ErrWriter, c.Duration("grace"), what, shutdown)
}

// cancelled returns a context that is already done: a shutdown with no grace.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// writeAtomic writes data to path through a temporary file in the same directory and a
// rename, so that a reader sees either no file or the whole of it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// errServeCut is stopGracefully's error when work in flight had to be cut: labrun exits 130
// (interrupted), whichever signal stopped it.
var errServeCut = errors.New("serve: work in flight cut")

// stopGracefully stops a labrun serve once it was told to: shutdown stops taking new work
// and returns once the work in flight ("what": requests, streams) finished, or with an error
// once its context is done. The context ends after grace, or at a second stop signal. It
// returns nil when nothing had to be cut, and an error otherwise, which run reports as
// interrupted (exit 130).
//
// The second signal is caught here rather than by run's signal.NotifyContext, which stops
// listening after the first. A signal that arrives between the two registrations (a few
// microseconds) is swallowed by NotifyContext's channel; pressing Ctrl-C once more cuts.
func stopGracefully(stderr io.Writer, grace time.Duration, what string, shutdown func(context.Context) error) error {
	again := make(chan os.Signal, 1)
	signal.Notify(again, stopSignals...)
	defer signal.Stop(again)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case <-again:
			cancel()
		case <-ctx.Done():
		}
	}()
	fmt.Fprintf(stderr, "labrun: stopping: %s in flight get %v to finish (Ctrl-C again cuts them)\n", what, grace)
	if err := shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "labrun: cut the %s still in flight\n", what)
		return fmt.Errorf("%w: %w", errServeCut, err)
	}
	fmt.Fprintln(stderr, "labrun: stopped")
	return nil
}

// addrError turns fakesrv.New's error into labrun's. A malformed or non-loopback --addr is
// bad usage, and the refusal names the flag that lifts it; anything else, a port in use
// first, is a runtime failure.
func addrError(addr string, err error) error {
	var ae *fakesrv.AddrError
	var oe *net.OpError
	switch {
	case errors.As(err, &ae) && ae.NotLoopback:
		return usagef("--addr %s: %v; pass --allow-remote to listen on it", addr, ae.Err)
	case errors.As(err, &ae):
		return usagef("--addr %s: %v", addr, ae.Err)
	case errors.As(err, &oe):
		return fmt.Errorf("cannot listen on %s: %w", addr, oe.Err)
	default:
		return err
	}
}
