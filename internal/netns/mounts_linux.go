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

// mountEnv marks a RunMounted child; its value is the parent's mount namespace.
const mountEnv = "LABRUN_NETNS_MOUNTS"

// RunMounted is Run with the child in a new mount namespace, every mount private, so what the job
// mounts (BindFile) only it and its programs see.
func RunMounted(ctx context.Context, job string, input, output any) error {
	return run(ctx, job, input, output, true)
}

// privateMounts makes a RunMounted child's mounts private.
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

// checkMounts refuses outside a RunMounted child with its own mount namespace.
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

// BindFile mounts a file holding content, kept in dir (the caller removes it), over target in
// the child's mount namespace. It refuses outside a RunMounted child.
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

// LoopbackUp sets the child's lo up; it refuses outside a child. A job with a Pair must not call
// it: the pair uses 127.0.0.0/8 too.
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
