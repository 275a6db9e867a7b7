package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

// storeSession writes a generated session of about size bytes to a file
// and sends it to a project of its own in the test store.
func storeSession(t testing.TB, size int64, extra string) (*pgstore.Store, transcript.Source, []string) {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer
	st, err := gen.Generate(&b, gen.Options{Size: size, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	store := db.Project(pgtest.Project(t))
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if _, err := pgstore.Sync(ctx, src, store, st.SessionID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Remove(context.Background(), st.SessionID) }) // 100 MB, not left in the shared server
	var ids []string
	for line := range bytes.SplitSeq(b.Bytes(), []byte("\n")) {
		if e, err := transcript.DecodeEntry(line); err == nil && e.IsChain() {
			ids = append(ids, e.UUID)
		}
	}
	return store, src, append(ids, st.SessionID)
}

// TestStoreHistoryAsFile: the team store's pages, read through its
// indexes, are the pages History reads from the file it was sent from —
// the newest, any before, one naming a line that is not an event (400,
// as one naming nothing).
func TestStoreHistoryAsFile(t *testing.T) {
	const notEvent = "8a7f0c1e-0000-4000-8000-00000000beef"
	store, src, ids := storeSession(t, 400<<10, `{"type":"progress","uuid":"`+notEvent+`","sessionId":"x"}`+"\n")
	id := ids[len(ids)-1]
	ids = ids[:len(ids)-1]
	ctx := context.Background()
	befores := []string{"", "no-such-event", notEvent}
	for i := 0; i < len(ids); i += 17 {
		befores = append(befores, ids[i])
	}
	for _, before := range befores {
		want, werr := serve.History(ctx, src, before, 50)
		got, gerr := storeHistory(ctx, store, id, before, 50)
		if !errors.Is(gerr, werr) || (werr != nil) != (gerr != nil) {
			t.Errorf("before %q: History %v, the store %v", before, werr, gerr)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("before %q (-History of the file +the store):\n%s", before, diff)
		}
	}
}

// BenchmarkStoreHistory100MB reads pages of a 100 MB session in the team
// store as `cairn serve --store` does: the newest, and the page before an
// event a third of the way back (through the index on (session, uuid)).
// whole-source is how pages were read before: the whole session from the
// store, then History (run it with -benchtime 3x).
func BenchmarkStoreHistory100MB(b *testing.B) {
	store, _, ids := storeSession(b, 100<<20, "")
	id := ids[len(ids)-1]
	before := ids[(len(ids)-1)*2/3]
	ctx := context.Background()
	for _, c := range []struct{ name, before string }{{"newest", ""}, {"before-a-third-back", before}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if p, err := storeHistory(ctx, store, id, c.before, 100); err != nil || len(p.Events) != 100 {
					b.Fatal(len(p.Events), err)
				}
			}
		})
	}
	b.Run("whole-source", func(b *testing.B) {
		for b.Loop() {
			src, err := store.OpenSource(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if p, err := serve.History(ctx, src, before, 100); err != nil || len(p.Events) != 100 {
				b.Fatal(len(p.Events), err)
			}
		}
	})
}
