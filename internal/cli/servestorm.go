package cli

import (
	"fmt"
	"net"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/internal/upstream"
)

// This file is labrun serve --storm: exp-n's downstream of fixed capacity (upstream.FIFO),
// for a team to storm its own client or service against it.

// serveStormFlags are the flags that apply only to --storm.
var serveStormFlags = []string{"capacity", "service"}

// stormNotes say why a flag of the fault server does not apply to --storm.
var stormNotes = map[string]string{
	"protocol":               "--storm speaks HTTP/1.1",
	"idempotent":             "--storm keeps no reservations",
	"tls-name":               "--storm serves no TLS",
	"ca-out":                 "--storm serves no TLS",
	"max-concurrent-streams": "--storm speaks HTTP/1.1",
	"h2":                     "--storm starts its own server",
	"h2c":                    "--storm starts its own server",
	"tls-faults":             "--storm starts its own server",
	"grpc":                   "--storm starts its own server",
	"dns-delay":              "--storm serves no DNS",
	"hosts-out":              "--storm serves no DNS",
	"max-duration":           "--storm's requests take --service once served",
	"idle-timeout":           "--storm keeps Go's defaults",
}

// The bounds of --capacity and --service.
const (
	maxStormCapacity = 10000
	maxStormService  = time.Minute
)

// serveStorm is labrun serve --storm.
func serveStorm(c *cli.Context) error {
	if err := checkServeMode(c, "--storm", stormNotes); err != nil {
		return err
	}
	capacity, service := c.Int("capacity"), c.Duration("service")
	if capacity < 1 || capacity > maxStormCapacity {
		return usagef("--capacity must be 1 to %d, got %d", maxStormCapacity, capacity)
	}
	if service <= 0 || service > maxStormService {
		return usagef("--service must be above 0 and at most %v, got %v", maxStormService, service)
	}
	addr := c.String("addr")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %s: %v", addr, err)
	}
	if !c.Bool("allow-remote") && !isLoopback(host) {
		return usagef("--addr %s: not a loopback address; pass --allow-remote to listen on it", addr)
	}
	d, err := upstream.NewFIFO(capacity, service, upstream.FIFOOptions{Addr: addr})
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	banner := fmt.Sprintf("labrun: serving a downstream of %d at once, %v each, in FIFO order, on %s until Ctrl-C\n"+
		"  any path: queued, served, 200 (a caller that left is still served: its work is wasted)\n"+
		"  ?call=ID or Labrun-Call: ID names the call a request belongs to (its retries share it)\n"+
		"  POST %s/pause?for=500ms pauses it; GET %s/stats counts received, executed, wasted, queued, amplification\n",
		capacity, service, d.URL, d.URL, d.URL)
	return serveUntilStopped(c, d.URL+"\n", banner, "requests", d.Shutdown)
}
