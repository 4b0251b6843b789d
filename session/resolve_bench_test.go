package session

import (
	"context"
	"testing"
)

// BenchmarkResolve finds sessions by their exact ids in a store of 1,000
// (what the gateway does at every run start).
func BenchmarkResolve(b *testing.B) {
	st := &JSONLStore{Dir: b.TempDir(), Sync: SyncNever}
	ctx := context.Background()
	ids := make([]string, 1000)
	for i := range ids {
		s, err := st.Create(ctx, CreateOptions{Cwd: "/bench"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Append(ctx, crashEntry(0)); err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID()
		s.Close()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := st.Resolve(ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
