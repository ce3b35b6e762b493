package cli

import "runtime/debug"

// commit is the git commit labrun was built from, set by the Makefile through
// -ldflags "-X github.com/labrun/labrun/internal/cli.commit=...". A plain go build leaves it
// empty, and the build's own VCS stamp, when there is one, is used instead.
var commit string

// version returns the module version and the commit, as well as they are known.
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(commit, bi)
}

// versionOf is the version line for a build whose Makefile stamp is stamp ("" for none) and
// whose build information is bi (nil when unknown): the module version ("(devel)" for a build
// from a working tree), then the commit, from the stamp or else from the build's VCS
// information, "-dirty" when that says the tree had changes. A build from a working tree
// that knows no commit (go run, go build -buildvcs=false) says so, rather than guessing it
// from whatever repository the current directory is in: "(devel) (commit unknown)". A
// released version needs no commit: it names one.
func versionOf(stamp string, bi *debug.BuildInfo) string {
	v, rev, dirty := "(devel)", stamp, false
	if bi != nil {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && stamp == "":
				rev = s.Value
			case s.Key == "vcs.modified" && stamp == "":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev != "" && dirty:
		return v + " (" + rev + "-dirty)"
	case rev != "":
		return v + " (" + rev + ")"
	case v == "(devel)":
		return v + " (commit unknown: make build or make install records it)"
	}
	return v
}
