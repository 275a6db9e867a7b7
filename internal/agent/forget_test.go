package agent_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
)

// TestCompactionLetsGoOfTheResumedEntries: a resumed session keeps the
// entries its load read (to read its transcript back cheaply); a
// compaction lets go of them, so that a long conversation's entries do not
// stay in memory through the summary's requests and after. The oldest
// entry the resume read is collected once the compaction is done: nothing
// the session keeps still holds it.
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the resumed conversation's oldest entry is still held 5 s after its compaction")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
