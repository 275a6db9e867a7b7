package agent_test

import (
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestResumeAndForkWrites: a resumed session appends only its new turn
// to the file, writing no loaded entry again, even when something hands
// the writer a loaded entry; a fork writes every entry of the
// conversation into its own file, under its own id, then its turn, and
// leaves the original as it was.
func TestResumeAndForkWrites(t *testing.T) {
	onStores(t, testResumeAndForkWrites)
}

func testResumeAndForkWrites(t *testing.T, k storeKind) {
	sc := &script{steps: 2}
	r := newRig(t, k, 0, sc)
	w := tokens.Window{Size: 200_000, MaxOutput: 4_000}
	a := r.open(t, w, nil)
	id, store := a.ID(), a.Store()
	runAll(t, a, "first")
	runAll(t, a, "second")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	before := transcripttest.ReadAll(t, store, id)
	chain := chainUUIDs(before)
	if len(chain) < 6 {
		t.Fatalf("%d chain entries after two turns", len(chain))
	}

	resumed := r.open(t, w, func(o *agent.Options) { o.Resume = id })
	conv, err := resumed.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// An entry read back from the file is known to the writer (the last:
	// the next turn follows it, as it would anyway).
	if err := agent.AppendToTranscript(t.Context(), resumed, *conv.Entries[len(conv.Entries)-1]); err != nil {
		t.Fatal(err)
	}
	runAll(t, resumed, "third")
	if err := resumed.Close(); err != nil {
		t.Fatal(err)
	}
	after := chainUUIDs(transcripttest.ReadAll(t, store, id))
	if !slices.Equal(after[:len(chain)], chain) {
		t.Fatalf("the resumed file does not start with the session's entries")
	}
	seen := map[string]bool{}
	for _, u := range after {
		if seen[u] {
			t.Errorf("entry %s written twice", u)
		}
		seen[u] = true
	}
	if len(after) == len(chain) {
		t.Error("the resumed turn was not written")
	}

	fork := r.open(t, w, func(o *agent.Options) { o.Resume, o.Fork = id, true })
	forkID := fork.ID()
	runAll(t, fork, "in the fork")
	if err := fork.Close(); err != nil {
		t.Fatal(err)
	}
	if forkID == id {
		t.Fatal("the fork kept the session's id")
	}
	forked := transcripttest.ReadAll(t, store, forkID)
	if got := chainUUIDs(forked); len(got) <= len(after) || !slices.Equal(got[:len(after)], after) {
		t.Errorf("the fork's file holds %d chain entries, want the %d of the session first, then its turn", len(got), len(after))
	}
	for _, e := range forked {
		if e.SessionID != "" && e.SessionID != forkID {
			t.Errorf("a %s entry of the fork carries session id %s", e.Type, e.SessionID)
			break
		}
	}
	if got := chainUUIDs(transcripttest.ReadAll(t, store, id)); !slices.Equal(got, after) {
		t.Error("the fork changed the original session's file")
	}
}

// chainUUIDs lists the uuids of the chain entries, in file order.
func chainUUIDs(es []transcript.Entry) []string {
	var out []string
	for _, e := range es {
		if e.UUID != "" {
			out = append(out, e.UUID)
		}
	}
	return out
}
