package vanish

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
)

// DialDown connects to addr, a host that is down (say a fakesrv.NewBlackhole address on
// loopback), from the calling process's own namespace, with the socket's own SYN retry count
// (TCP_SYNCNT, 1..127) and, when timeout is positive, a connect timeout. It needs no namespace
// and no privileges. With no timeout the dial ends when the kernel gives up, after
// model.Kernel{SYNLinearTimeouts: L}.SYNGiveUp(synRetries), L being the host's
// net.ipv4.tcp_syn_linear_timeouts: 3 s for one retry, 7 s for two, with or without L.
func DialDown(ctx context.Context, addr string, synRetries int, timeout time.Duration) Sample {
	if synRetries < 1 || synRetries > netns.MaxSynCount {
		return Sample{Outcome: vocab.Failed, Err: "vanish: syn retries out of range"}
	}
	return dial(ctx, net.Dialer{Timeout: timeout, Control: netns.SynCount(synRetries)}, addr)
}

// classify names the outcome of a plain net/http or net error. The kernel giving up
// (ETIMEDOUT, whose Timeout() is true as well) is a failure, as for every measured call; a dial
// that timed out is a connect timeout, a read past its deadline a read timeout.
func classify(err error) vocab.Outcome {
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ETIMEDOUT):
		return vocab.Failed
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return vocab.ConnectTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return vocab.ReadTimeout
	}
	return vocab.Failed
}

// dial connects with d and reports when and how the connect ended.
func dial(ctx context.Context, d net.Dialer, addr string) Sample {
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp4", addr)
	s := Sample{Elapsed: time.Since(start), Outcome: vocab.OK}
	if err != nil {
		s.Outcome, s.Err, s.KernelTimeout = classify(err), err.Error(), errors.Is(err, syscall.ETIMEDOUT)
		return s
	}
	_ = c.Close() // a server that is down cannot have answered; nothing to report
	return s
}
