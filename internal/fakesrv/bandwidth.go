package fakesrv

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// MaxBandwidth bounds Behaviour.Bandwidth, in bytes per second: a gigabyte a second is no cap.
const MaxBandwidth = 1 << 30

// parseBandwidth reads the bandwidth key into b.
func parseBandwidth(b *Behaviour, q url.Values) error {
	n, err := parseCount(q, "bandwidth", 1, MaxBandwidth)
	if err != nil {
		return err
	}
	if n > 0 && b.Every > 0 {
		return errors.New("bandwidth and every exclude each other: both pace the body")
	}
	b.Bandwidth = n
	return nil
}

// paced answers 200 with body at b.Bandwidth bytes per second from the head: the bytes due at
// each wake-up, a wake-up no sooner than CoarseTick after the last, so a fast rate costs no
// more CPU than a trickle. The server's max duration cuts it short, as it does a trickle.
func (x *exchange) paced(b Behaviour, body []byte) bool {
	rate := float64(b.Bandwidth)
	maxDur := x.s.opts.maxDuration
	last := len(body)
	if whole := time.Duration(float64(last) / rate * float64(time.Second)); whole > maxDur {
		last = int(maxDur.Seconds() * rate)
		x.w.Header().Add(CappedHeader, fmt.Sprintf("%d bytes at %d B/s (%v) capped to %v: the body ends short", len(body), b.Bandwidth, whole.Round(time.Millisecond), maxDur))
	}
	if !x.head(200, len(body)) {
		return false
	}
	head := x.rec.HeadSent
	for sent := 0; sent < last; {
		next := head.Add(time.Duration(float64(sent+1) / rate * float64(time.Second)))
		next = later(next, time.Now().Add(CoarseTick))
		if !x.waitUntil(next) {
			return x.stop()
		}
		due := min(last, int(time.Since(head).Seconds()*rate))
		for due > sent {
			k := min(due-sent, 64<<10)
			if !x.body(body[sent : sent+k]) {
				return false
			}
			sent += k
		}
	}
	return last == len(body) || !x.http2()
}
