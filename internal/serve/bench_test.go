package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
)

// BenchmarkHistory100MB pages through a 100 MB session with no
// compaction: the newest page, and the page before an event about a third
// of the way back (the worst case reads from the end to there).
func BenchmarkHistory100MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	st, err := gen.Generate(f, gen.Options{Size: 100 << 20, Seed: 1})
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	b.Run("newest", func(b *testing.B) {
		for b.Loop() {
			if p, err := serve.History(ctx, src, "", 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
	before := st.Resume[len(st.Resume)*2/3]
	b.Run("before-a-third-back", func(b *testing.B) {
		for b.Loop() {
			if p, err := serve.History(ctx, src, before, 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
}
