//go:build !unix

package report

// lockDir does nothing without flock: concurrent writers are not kept apart.
func lockDir(string) (func(), error) { return func() {}, nil }
