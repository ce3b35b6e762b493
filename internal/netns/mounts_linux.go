//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// mountEnv marks a child that Run started in a mount namespace of its own too (RunMounted).
// Its value is the parent's mount namespace: the child checks that it is not in it.
const mountEnv = "LABRUN_NETNS_MOUNTS"

// RunMounted is Run with one more namespace: the child is also in a new mount namespace, owned
// by its user namespace, whose mounts are all made private first, so that what the job mounts
// (BindFile) is seen by the job and the processes it starts, and by nothing else. A program
// the job starts reads, for example, a resolv.conf of the job's own, while the host's file is
// left as it is.
func RunMounted(ctx context.Context, job string, input, output any) error {
	return run(ctx, job, input, output, true)
}

// privateMounts checks, in a child started by RunMounted, that it is in a mount namespace
// that is not its parent's, and makes every mount of it private: no mount the job makes
// propagates anywhere. In a child started by Run it does nothing.
func privateMounts() error {
	parent := os.Getenv(mountEnv)
	if parent == "" {
		return nil
	}
	if err := checkMounts(); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	return nil
}

// checkMounts refuses unless the process is a namespace child (checkChild) that RunMounted
// started, in a mount namespace other than its parent's.
func checkMounts() error {
	if err := checkChild(); err != nil {
		return err
	}
	parent := os.Getenv(mountEnv)
	if parent == "" {
		return errors.New("refusing: not in a mount namespace of its own (the job was started by Run, not RunMounted)")
	}
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("read own mount namespace: %w", err)
	}
	if own == parent {
		return fmt.Errorf("refusing: still in the parent's mount namespace (%s)", own)
	}
	return nil
}

// BindFile mounts a file holding content over target (a file that exists, /etc/resolv.conf
// for example) in the child's own mount namespace: the job and the programs it starts read
// content there; the host's file is untouched. It refuses to run outside a child started by
// RunMounted. The file holding content is kept in dir, which the caller removes after the
// job.
func BindFile(dir, target string, content []byte) error {
	if err := checkMounts(); err != nil {
		return fmt.Errorf("netns: bind %s: %w", target, err)
	}
	src, err := os.CreateTemp(dir, filepath.Base(target)+".")
	if err != nil {
		return fmt.Errorf("netns: bind %s: %w", target, err)
	}
	_, werr := src.Write(content)
	if err := errors.Join(werr, src.Chmod(0o644), src.Close()); err != nil {
		return fmt.Errorf("netns: bind %s: %w", target, err)
	}
	if err := unix.Mount(src.Name(), target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("netns: bind %s: %w", target, err)
	}
	return nil
}

// LoopbackUp sets the child's own lo up, with its 127.0.0.0/8 and ::1: a fresh network
// namespace has it down. It refuses to run outside a namespace child. A job that builds a
// Pair must not call it (the pair's addresses are in 127.0.0.0/8 too).
func LoopbackUp() error {
	if err := checkChild(); err != nil {
		return fmt.Errorf("netns: loopback up: %w", err)
	}
	return onLockedThread(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("netns: loopback up: %w", err)
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("netns: loopback up: %w", err)
		}
		return nil
	})
}
