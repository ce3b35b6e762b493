package jvm

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	r := Require(t, OkHttp3)
	if r.Major < 11 || r.Version == "" {
		t.Fatalf("got %+v", r)
	}
	out, err := r.Run(t.Context(), Program{Source: "testdata/Echo.java", Libs: []Library{OkHttp3},
		Props: []string{"labrun.prop=yes"}, Env: []string{"LABRUN_CLASS=okhttp3.OkHttpClient"}}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"a b", r.Version, "yes", "okhttp3.OkHttpClient"}
	if len(lines) != len(want) {
		t.Fatalf("got %q, want %q", lines, want)
	}
	for i := range want {
		if i != 1 && lines[i] != want[i] {
			t.Errorf("line %d: got %q, want %q", i, lines[i], want[i])
		}
	}
	if !strings.HasPrefix(r.Version, lines[1]) && !strings.HasPrefix(lines[1], r.Version) {
		t.Errorf("java.version %q, java -version %q", lines[1], r.Version)
	}
}

func TestRunFails(t *testing.T) {
	r := Require(t)
	_, err := r.Run(t.Context(), Program{Source: "testdata/NoSuch.java"})
	if err == nil || !strings.Contains(err.Error(), "NoSuch.java") {
		t.Errorf("got %v, want an error naming the program", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Run(ctx, Program{Source: "testdata/Echo.java"}); err == nil {
		t.Error("a program cut at 50 ms: got no error")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a cancelled program took %v to end", d)
	}
}

func TestClasspathNamesThePackage(t *testing.T) {
	_, err := Classpath(Library{Name: "x", Jars: []string{"labrun-no-such.jar"}, Package: "libnosuch-java"})
	if err == nil || !strings.Contains(err.Error(), "libnosuch-java") {
		t.Errorf("got %v, want an error naming the Debian package", err)
	}
}

// TestRunWith: a program and its helper class are compiled together; a helper that is missing
// fails with javac's error.
func TestRunWith(t *testing.T) {
	r := Require(t)
	out, err := r.Run(t.Context(), Program{Source: "testdata/Greet.java", With: []string{"testdata/Greeting.java"},
		Props: []string{"labrun.prop=yes"}}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "hello a b" {
		t.Errorf("got %q, want %q", got, "hello a b")
	}
	_, err = r.Run(t.Context(), Program{Source: "testdata/Greet.java", With: []string{"testdata/NoSuch.java"}})
	if err == nil || !strings.Contains(err.Error(), "javac Greet.java") {
		t.Errorf("got %v, want javac's error", err)
	}
}
