package cli

import "syscall"

// limitFiles sets this process's RLIMIT_NOFILE, soft and hard, to n.
func limitFiles(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
