package clock

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timer is a timerfd in the runtime's netpoller.
type timer struct {
	fd int
	f  *os.File
}

func newTimer() (*timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &timer{fd: fd, f: os.NewFile(uintptr(fd), "clock-timerfd")}, nil
}

// arm expires the timer once, d > 0 from now.
func (t *timer) arm(d time.Duration) error {
	return unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, nil)
}

func (t *timer) wait() error {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	return err
}
