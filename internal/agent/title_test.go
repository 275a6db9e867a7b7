package agent_test

import (
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
)

// TestTitleOutlivesCompactionAndFork: a name given with /rename before a
// compaction is the session's name again after a resume (which reads
// the transcript back only to the compaction), and a fork carries it into
// its own transcript.
func TestTitleOutlivesCompactionAndFork(t *testing.T) {
	onStores(t, testTitleOutlivesCompactionAndFork)
}

func testTitleOutlivesCompactionAndFork(t *testing.T, k storeKind) {
	sc := &script{steps: 3}
	r := newRig(t, k, 0, sc)
	w := tokens.Window{Size: 200_000, MaxOutput: 4_000}
	a := r.open(t, w, nil)
	id := a.ID()
	runAll(t, a, "first")
	if err := a.Rename(t.Context(), "MY-TITLE"); err != nil {
		t.Fatal(err)
	}
	sc.mu.Lock()
	sc.steps = 6 // a long turn, which the compaction summarises
	sc.mu.Unlock()
	runAll(t, a, "second")
	runAll(t, a, "short")
	if _, err := a.Compact(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	runAll(t, a, "third")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	resumed := r.open(t, w, func(o *agent.Options) { o.Resume = id })
	if got := resumed.Title(); got != "MY-TITLE" {
		t.Errorf("title after a resume past a compaction: %q, want MY-TITLE", got)
	}
	if err := resumed.Close(); err != nil {
		t.Fatal(err)
	}
	fork := r.open(t, w, func(o *agent.Options) { o.Resume, o.Fork = id, true })
	forkID := fork.ID()
	if got := fork.Title(); got != "MY-TITLE" {
		t.Errorf("title of the fork: %q, want MY-TITLE", got)
	}
	runAll(t, fork, "in the fork")
	if err := fork.Close(); err != nil {
		t.Fatal(err)
	}
	again := r.open(t, w, func(o *agent.Options) { o.Resume = forkID })
	if got := again.Title(); got != "MY-TITLE" {
		t.Errorf("title of the fork's own transcript: %q, want MY-TITLE", got)
	}
}
