package a

import (
	"testing"

	helper "example.com/mod/b"
)

type suite struct{}

func (suite) check(t *testing.T) { helper.Slow(t) }

var once = func(t *testing.T) { suite{}.check(t) }

func TestThroughMethodAndVar(t *testing.T) { once(t) }

func TestTable(t *testing.T) {
	for _, f := range []func(*testing.T){direct} {
		f(t)
	}
}

func direct(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
}

func TestFast(t *testing.T) { _ = helper.Fine() }

func Testlower(t *testing.T) { direct(t) }
