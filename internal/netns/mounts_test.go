//go:build linux

package netns

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// mountsResult is what mountsJob saw in its namespaces.
type mountsResult struct {
	Resolv  string // /etc/resolv.conf, read after the bind
	DNSPort string // the UDP address it could listen on, 127.0.0.1:53
}

const testResolv = "nameserver 127.0.0.1\n# labrun netns test\n"

// mountsJob sets lo up, binds a resolv.conf of its own and listens on 127.0.0.1:53, as a
// probe's lookup scenarios do.
func mountsJob(ctx context.Context, _ struct{}) (mountsResult, error) {
	var out mountsResult
	if err := LoopbackUp(); err != nil {
		return out, err
	}
	dir, err := os.MkdirTemp("", "labrun-netns-test-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	if err := BindFile(dir, "/etc/resolv.conf", []byte(testResolv)); err != nil {
		return out, err
	}
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return out, err
	}
	out.Resolv = string(b)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return out, err
	}
	out.DNSPort = pc.LocalAddr().String()
	return out, pc.Close()
}

// TestRunMounted runs a job that binds its own resolv.conf and listens on port 53 in its own
// namespaces: it sees its file, the host keeps its own, and a job started by Run (no mount
// namespace of its own) is refused the bind.
func TestRunMounted(t *testing.T) {
	needNamespaces(t)
	before, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Skipf("no /etc/resolv.conf here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got mountsResult
	if err := RunMounted(ctx, "test.mounts", nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.Resolv != testResolv || got.DNSPort != "127.0.0.1:53" {
		t.Errorf("inside the child: got %+v, want resolv.conf %q and 127.0.0.1:53", got, testResolv)
	}
	after, err := os.ReadFile("/etc/resolv.conf")
	if err != nil || string(after) != string(before) {
		t.Errorf("host's /etc/resolv.conf changed: %q, %v; want %q", after, err, before)
	}
	err = Run(ctx, "test.mounts", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not in a mount namespace of its own") {
		t.Errorf("bind in a child of Run: got %v, want a refusal", err)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("children left: %v", kids)
	}
}

func TestBindFileOutsideChild(t *testing.T) {
	if err := BindFile(t.TempDir(), "/etc/resolv.conf", []byte(testResolv)); err == nil {
		t.Error("BindFile outside a child: got no error, want a refusal")
	}
	if err := LoopbackUp(); err == nil {
		t.Error("LoopbackUp outside a child: got no error, want a refusal")
	}
}

func TestEnvironWithoutMarks(t *testing.T) {
	t.Setenv(childEnv, "net:[1] user:[2] 0 0")
	t.Setenv(mountEnv, "mnt:[3]")
	t.Setenv("LABRUN_NETNS_TEST_OTHER", "kept out")
	t.Setenv("LABRUN_URL", "http://127.0.0.1/")
	env := strings.Join(Environ(), "\n")
	if strings.Contains(env, "LABRUN_NETNS_") || !strings.Contains(env, "LABRUN_URL=http://127.0.0.1/") {
		t.Errorf("Environ: got %q, want LABRUN_URL and no LABRUN_NETNS_ variable", env)
	}
}
