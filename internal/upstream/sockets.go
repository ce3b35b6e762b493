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

// TCP states as numbered in /proc/net/tcp (include/net/tcp_states.h).
const (
	StateEstablished = 0x01
	StateFinWait1    = 0x04
	StateFinWait2    = 0x05
	StateTimeWait    = 0x06
)

// Socket is one IPv4 TCP socket of this namespace to the port asked for.
type Socket struct {
	// Local is the kernel's hex form ("0100007F:A1B2"); it names the socket.
	Local string
	State int
}

// CallerSockets lists the sockets to remote port port, TIME_WAIT included.
func CallerSockets(port int) ([]Socket, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("upstream: read the kernel's sockets: %w", err)
	}
	defer f.Close()
	return parseSockets(f, port)
}

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

// TimeWaitSet is the sockets to port in TIME_WAIT now, by local address.
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

const settleTimeWait = time.Second

// NewTimeWaits counts port's TIME_WAIT sockets not in before, once none is closing, after
// settleTimeWait, or at ctx's end.
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
