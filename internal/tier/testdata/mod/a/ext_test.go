package a_test

import (
	"testing"

	"example.com/mod/b"
)

func TestExternal(t *testing.T) { b.Slow(t) }

func ExampleFast() {}
