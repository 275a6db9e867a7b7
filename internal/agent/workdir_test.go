package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// TestWorkingCopiesOfTwoStores opens the same session id on two memory
// stores at once: each gets its own working copy, closing one leaves the
// other's files, and the store's file-history backups are not copied in.
func TestWorkingCopiesOfTwoStores(t *testing.T) {
	srv := modeltest.Start(t, modeltest.Config{Respond: func(*modeltest.Request) modeltest.Reply { return modeltest.Text("ok") }})
	open := func(store *transcript.MemStore) *agent.Agent {
		home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
		return openOn(t, srv, agent.Options{Home: home, Cwd: cwd, Store: store, ModelName: "claude-test", MaxTokens: 4000, NewUUID: counter()}, nil)
	}
	s1, s2 := transcript.NewMemStore(), transcript.NewMemStore()
	// The session id the counter gives first, with a backup in the store.
	const id = "00000000-0000-4000-8000-000000000001"
	if err := s1.WriteSidecar(t.Context(), id, "file-history/abc@v1", []byte("old")); err != nil {
		t.Fatal(err)
	}
	a1, a2 := open(s1), open(s2)
	if a1.ID() != a2.ID() {
		t.Fatalf("ids %s and %s; the test wants one id twice", a1.ID(), a2.ID())
	}
	d1, d2 := filepath.Dir(filepath.Dir(a1.NotesPath())), filepath.Dir(filepath.Dir(a2.NotesPath()))
	if d1 == d2 {
		t.Fatalf("both sessions work in %s", d1)
	}
	if _, err := os.Stat(filepath.Join(d1, "file-history")); !os.IsNotExist(err) {
		t.Errorf("the file-history backups were copied into the working copy (%v)", err)
	}
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d2); err != nil {
		t.Errorf("closing one session removed the other's working copy: %v", err)
	}
}
