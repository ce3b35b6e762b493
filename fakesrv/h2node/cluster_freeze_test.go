package h2node

import "testing"

// TestClusterFreezeThaw: Freeze and Thaw take a node's index from 0, or every node for i < 0,
// and Stats shows which are frozen.
func TestClusterFreezeThaw(t *testing.T) {
	c := newCluster(t, 2)
	frozen := func() [2]bool {
		st := c.Stats()
		return [2]bool{st[0].Frozen, st[1].Frozen}
	}
	c.Freeze(-1)
	if got := frozen(); got != [2]bool{true, true} {
		t.Fatalf("after Freeze(-1): %v, want both frozen", got)
	}
	c.Thaw(1)
	if got := frozen(); got != [2]bool{true, false} {
		t.Fatalf("after Thaw(1): %v, want node 1 alone frozen", got)
	}
	c.Thaw(-1)
	if got := frozen(); got != [2]bool{false, false} {
		t.Fatalf("after Thaw(-1): %v, want none frozen", got)
	}
}
