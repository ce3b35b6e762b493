//go:build !linux

package cli

import "errors"

// limitFiles is Linux's only: the tests that need it are.
func limitFiles(uint64) error { return errors.New("RLIMIT_NOFILE is set on Linux only") }
