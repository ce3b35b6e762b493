package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// TCP states as the kernel numbers them in /proc/net/tcp (include/net/tcp_states.h).
const (
	StateEstablished = 0x01
	StateFinWait1    = 0x04
	StateFinWait2    = 0x05
	StateTimeWait    = 0x06
)

// Socket is one IPv4 TCP socket of this network namespace to the remote port asked for.
type Socket struct {
	// Local is the local address in the kernel's hex form ("0100007F:A1B2"); it names the
	// socket.
	Local string
	State int
}

// CallerSockets reads /proc/net/tcp for the sockets whose remote port is port, TIME_WAIT ones
// included (the kernel keeps those 60 s after the side that closed first).
func CallerSockets(port int) ([]Socket, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("upstream: read the kernel's sockets: %w", err)
	}
	defer f.Close()
	return parseSockets(f, port)
}

// parseSockets reads the /proc/net/tcp format.
func parseSockets(r io.Reader, port int) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		_, rport, ok := strings.Cut(f[2], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(rport, 16, 16)
		if err != nil || int(p) != port {
			continue
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			continue
		}
		out = append(out, Socket{Local: f[1], State: int(st)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("upstream: read the kernel's sockets: %w", err)
	}
	return out, nil
}

// TimeWaitSet returns the sockets to port in TIME_WAIT now, by local address, for a later
// count to leave out.
func TimeWaitSet(port int) (map[string]bool, error) {
	socks, err := CallerSockets(port)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, s := range socks {
		if s.State == StateTimeWait {
			set[s.Local] = true
		}
	}
	return set, nil
}

// settleTimeWait bounds NewTimeWaits' wait for the closing sockets.
const settleTimeWait = time.Second

// NewTimeWaits counts the sockets to port in TIME_WAIT that are not in before, once none is
// closing (FIN_WAIT1 or 2), after settleTimeWait, or when ctx ends.
func NewTimeWaits(ctx context.Context, port int, before map[string]bool) (int, error) {
	give := time.Now().Add(settleTimeWait)
	for {
		socks, err := CallerSockets(port)
		if err != nil {
			return 0, err
		}
		n, closing := 0, false
		for _, s := range socks {
			switch {
			case before[s.Local]:
			case s.State == StateTimeWait:
				n++
			case s.State == StateFinWait1 || s.State == StateFinWait2:
				closing = true
			}
		}
		if !closing || time.Now().After(give) || ctx.Err() != nil {
			return n, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}
