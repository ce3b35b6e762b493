package c

import "testing"

func TestOnlyFast(t *testing.T) {}
