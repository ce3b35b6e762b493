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

// DialDown connects to addr, a host that is down (a fakesrv.NewBlackhole address), from the
// calling namespace with TCP_SYNCNT synRetries (1..127) and, when positive, a connect timeout;
// no privileges needed. Without timeout the kernel gives up after model.Kernel.SYNGiveUp.
func DialDown(ctx context.Context, addr string, synRetries int, timeout time.Duration) Sample {
	if synRetries < 1 || synRetries > netns.MaxSynCount {
		return Sample{Outcome: vocab.Failed, Err: "vanish: syn retries out of range"}
	}
	return dial(ctx, net.Dialer{Timeout: timeout, Control: netns.SynCount(synRetries)}, addr)
}

// classify names a plain net/http or net error's outcome: the kernel giving up (ETIMEDOUT) is
// a failure, a timed-out dial a connect timeout, a read past its deadline a read timeout.
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

func dial(ctx context.Context, d net.Dialer, addr string) Sample {
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp4", addr)
	s := Sample{Elapsed: time.Since(start), Outcome: vocab.OK}
	if err != nil {
		s.Outcome, s.Err, s.KernelTimeout = classify(err), err.Error(), errors.Is(err, syscall.ETIMEDOUT)
		return s
	}
	_ = c.Close()
	return s
}
