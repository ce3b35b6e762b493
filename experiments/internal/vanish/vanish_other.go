//go:build !linux

package vanish

import (
	"errors"
	"syscall"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// Jobs returns no job: they need Linux.
func Jobs() netns.Jobs { return netns.Jobs{} }

// StaleCheck fails: it is written for Linux.
func StaleCheck(c syscall.Conn) (healthy bool, reason error) {
	return false, errors.New("stale check: needs Linux")
}

// HostKernel returns the documented SYN rules.
func HostKernel() model.Kernel { return model.Kernel{} }
