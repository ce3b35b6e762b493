//go:build unix

package report

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on dir, waiting for another labrun, and returns its release.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // the last close releases the lock
}
