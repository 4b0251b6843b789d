package proc

import "testing"

// BenchmarkSweepNothingLeft is the cost a bash call pays after its shell
// exits when it left nothing behind: one walk of this process's subtree.
func BenchmarkSweepNothingLeft(b *testing.B) {
	tag := NewTag()
	b.ReportAllocs()
	for b.Loop() {
		if k := Kill(Target{Group: 1 << 30, Tag: tag}); len(k) != 0 {
			b.Fatalf("killed %v", k)
		}
	}
}
