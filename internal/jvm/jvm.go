// Package jvm runs small Java programs against labrun's fake servers, holding a client profile
// to the real library it emulates: the JDK's clients, Debian's HttpClient 4.5 and 5 and OkHttp 3
// (jars in /usr/share/java). A program is one source file run by the source launcher, or, with
// Program.With, files compiled together into a temporary directory. Tests call Require.
package jvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Library is a Java library: its jars, by their names in JarDir, and the Debian package.
type Library struct {
	Name    string
	Jars    []string
	Package string
}

const JarDir = "/usr/share/java"

var (
	// JDK is the JDK's own clients: no jars.
	JDK = Library{Name: "the JDK", Package: "default-jdk-headless"}
	// HttpClient5 is 5.2.1 in Debian 12.
	HttpClient5 = Library{Name: "Apache HttpClient 5", Package: "libhttpclient5-java",
		Jars: []string{"httpclient5.jar", "httpcore5.jar", "httpcore5-h2.jar", "slf4j-api.jar", "slf4j-nop.jar"}}
	// HttpClient4 is 4.5.14 in Debian 12.
	HttpClient4 = Library{Name: "Apache HttpClient 4.5", Package: "libhttpclient-java",
		Jars: []string{"httpclient.jar", "httpcore.jar", "commons-logging.jar", "commons-codec.jar"}}
	// OkHttp3 is 3.13.1 in Debian 12, with Okio.
	OkHttp3 = Library{Name: "OkHttp 3", Package: "libokhttp-java", Jars: []string{"okhttp.jar", "okio.jar"}}
)

// Runtime is a JDK found on this machine.
type Runtime struct {
	Java string
	// Major is the feature release (17 for 17.0.15).
	Major int
	// Version is java -version's, e.g. "17.0.15".
	Version string
}

var versionLine = regexp.MustCompile(`version "(\d+)(?:\.(\d+))?[^"]*"`)

// Find returns the JDK on PATH (or under JAVA_HOME); it must have the source launcher.
func Find(ctx context.Context) (Runtime, error) {
	java := ""
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); isExecutable(p) {
			java = p
		}
	}
	if java == "" {
		p, err := exec.LookPath("java")
		if err != nil {
			return Runtime{}, errors.New("jvm: no java on PATH (Debian: default-jdk-headless)")
		}
		java = p
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return Runtime{}, fmt.Errorf("jvm: %s -version: %w", java, err)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		return Runtime{}, fmt.Errorf("jvm: %s -version says %q", java, firstLine(out))
	}
	major := atoi(string(m[1]))
	if major == 1 {
		major = atoi(string(m[2]))
	}
	if major < 11 {
		return Runtime{}, fmt.Errorf("jvm: %s is Java %d; the source launcher needs 11 or later", java, major)
	}
	v := strings.TrimSuffix(strings.TrimPrefix(string(versionLine.Find(out)), `version "`), `"`)
	return Runtime{Java: java, Major: major, Version: v}, nil
}

// Classpath joins libs' jars for -cp, or names the missing Debian packages.
func Classpath(libs ...Library) (string, error) {
	var paths, missing []string
	for _, l := range libs {
		for _, j := range l.Jars {
			p := filepath.Join(JarDir, j)
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, fmt.Sprintf("%s (%s)", p, l.Package))
				continue
			}
			paths = append(paths, p)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("jvm: missing %s", strings.Join(missing, ", "))
	}
	return strings.Join(paths, string(os.PathListSeparator)), nil
}

// Program is one Java source file to run with some libraries.
type Program struct {
	// Source's public class is the program's.
	Source string
	// With are more .java files compiled with Source.
	With []string
	Libs []Library
	// Props are -D system properties.
	Props []string
	// Env is added to the environment.
	Env []string
}

// Run runs p with args and returns its standard output, its standard error in the error; all it
// started is killed when ctx is done.
func (r Runtime) Run(ctx context.Context, p Program, args ...string) ([]byte, error) {
	cp, err := Classpath(p.Libs...)
	if err != nil {
		return nil, err
	}
	argv := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}
	main := p.Source
	if len(p.With) > 0 {
		classes, err := r.compile(ctx, p, cp)
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(classes)
		cp = strings.Join(append([]string{classes}, filepath.SplitList(cp)...), string(os.PathListSeparator))
		main = strings.TrimSuffix(filepath.Base(p.Source), ".java")
	}
	if cp != "" {
		argv = append(argv, "-cp", cp)
	}
	for _, d := range p.Props {
		argv = append(argv, "-D"+d)
	}
	argv = append(append(argv, main), args...)
	cmd := exec.CommandContext(ctx, r.Java, argv...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("jvm: %s: %w: %s", filepath.Base(p.Source), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// compile compiles p into a new temporary directory, which the caller removes.
func (r Runtime) compile(ctx context.Context, p Program, cp string) (string, error) {
	javac := filepath.Join(filepath.Dir(r.Java), "javac")
	if !isExecutable(javac) {
		var err error
		if javac, err = exec.LookPath("javac"); err != nil {
			return "", fmt.Errorf("jvm: %s: no javac beside %s or on PATH (Debian: default-jdk-headless)", filepath.Base(p.Source), r.Java)
		}
	}
	dir, err := os.MkdirTemp("", "labrun-jvm-")
	if err != nil {
		return "", fmt.Errorf("jvm: %w", err)
	}
	argv := []string{"-nowarn", "-d", dir}
	if cp != "" {
		argv = append(argv, "-cp", cp)
	}
	argv = append(append(argv, p.Source), p.With...)
	cmd := exec.CommandContext(ctx, javac, argv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("jvm: javac %s: %w: %s", filepath.Base(p.Source), err, strings.TrimSpace(string(out)))
	}
	return dir, nil
}

// Require returns the JDK for a test holding a profile to libs. It skips under -short and, with
// the reason, where the JDK or a library is missing, except in CI, where that fails.
func Require(t testing.TB, libs ...Library) Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("a real library: the conformance tier (make conformance)")
	}
	r, err := Find(t.Context())
	if err == nil {
		_, err = Classpath(libs...)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: .ci/run installs it", err)
		}
		t.Skipf("%v", err)
	}
	return r
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}
