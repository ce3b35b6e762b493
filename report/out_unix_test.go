//go:build unix

package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteHonoursUmask: a new directory and its files get the permissions the umask allows,
// as any file a program creates does.
func TestWriteHonoursUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "out")
	writeOutSet(t, dir, suiteOf("exp-a"))
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode %o under umask 077, want 700", perm)
	}
	st, err = os.Stat(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("run.json mode %o under umask 077, want 600", perm)
	}
}
