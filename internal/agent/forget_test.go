package agent_test

import (
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/transcript"
)

// TestCompactionLetsGoOfTheResumedEntries: a resumed session keeps the
// entries its load read (to read its transcript back cheaply); a
// compaction lets go of them, so that a long conversation's entries do not
// stay in memory through the summary's requests and after. The oldest
// entry the resume read is collected while the summary is asked, and
// nothing holds it once the compaction is done.
func TestCompactionLetsGoOfTheResumedEntries(t *testing.T) {
	sc := &script{steps: 15}
	r := newRig(t, onFile, 1_000_000, sc)
	first := r.open(t, tokens.Window{Size: 1_000_000, MaxOutput: 4_000}, nil)
	if _, notices, err := run(t, first, "PLANTED-FACT: please run Big a few times"); err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	id := first.ID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	sc.mu.Lock()
	sc.steps, sc.calls = 0, 0
	sc.mu.Unlock()
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) { o.Resume = id })
	kept := agent.KeptEntries(a)
	if len(kept) < 10 {
		t.Fatalf("the resume keeps %d entries to read its transcript back, want the chain it read", len(kept))
	}
	collected := make(chan struct{})
	runtime.AddCleanup(kept[0], func(ch chan struct{}) { close(ch) }, collected)
	kept = nil
	var duringSummary atomic.Bool
	sc.mu.Lock()
	sc.onSummary = func() {
		if !duringSummary.Load() {
			duringSummary.Store(gone(collected, time.Second))
		}
	}
	sc.mu.Unlock()

	compactions, notices, err := run(t, a, "and now?")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) == 0 {
		t.Fatalf("no compaction of a resumed conversation over the window (notices %q)", notices)
	}
	if n := len(agent.KeptEntries(a)); n > 20 {
		t.Errorf("after the compaction the session keeps %d entries to read back", n)
	}
	if !duringSummary.Load() {
		t.Error("the resumed conversation's oldest entry was still held while the summary was asked")
	}
	if !gone(collected, 5*time.Second) {
		t.Fatal("the resumed conversation's oldest entry is still held 5 s after its compaction")
	}
}

// gone reports whether collected is closed (by a cleanup) within d,
// collecting meanwhile.
func gone(collected chan struct{}, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		select {
		case <-collected:
			return true
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBoundaryLetsGoOfTheResumedEntries: a compact boundary written to the
// transcript (as a compaction from the session notes writes it, with no
// summary asked) lets go of what the session kept to read it back.
func TestBoundaryLetsGoOfTheResumedEntries(t *testing.T) {
	sc := &script{steps: 3}
	r := newRig(t, onFile, 1_000_000, sc)
	w := tokens.Window{Size: 1_000_000, MaxOutput: 4_000}
	first := r.open(t, w, nil)
	if _, notices, err := run(t, first, "please run Big a few times"); err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	id := first.ID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	a := r.open(t, w, func(o *agent.Options) { o.Resume = id })
	if len(agent.KeptEntries(a)) == 0 {
		t.Fatal("the resume keeps no entries to read its transcript back")
	}
	b := transcript.Entry{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCompactBoundary, UUID: uuid.NewString(),
		Content: json.RawMessage(`"Conversation compacted"`), CompactMetadata: json.RawMessage(`{"trigger":"auto","preTokens":1000}`)}
	if err := agent.AppendToTranscript(t.Context(), a, b); err != nil {
		t.Fatal(err)
	}
	if n := len(agent.KeptEntries(a)); n != 0 {
		t.Errorf("after a compact boundary the session keeps %d entries to read back", n)
	}
}
