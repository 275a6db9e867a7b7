package agent_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// The agent's end-to-end tests run their sessions on each store through
// the same calls: the home's file store (Options.Store nil, as the
// command line opens a session) and the memory store (what an embedder
// without a disk, or a database store, gives). They read what a session
// wrote back through the store (stored, storedEntries, storedSidecar),
// never by path, so the same assertions hold on both. A test that needs
// the files themselves (a transcript removed or tampered with on disk,
// locks across processes) runs on the file store alone and says why.

// storeKind names a store the sessions of a test run on.
type storeKind string

const (
	onFile   storeKind = "file"
	onMemory storeKind = "memory"
)

// onStores runs body once on each store, as subtests named after it.
func onStores(t *testing.T, body func(t *testing.T, k storeKind)) {
	t.Helper()
	for _, k := range []storeKind{onFile, onMemory} {
		t.Run(string(k), func(t *testing.T) { body(t, k) })
	}
}

// store returns the store the rig's sessions are opened on: nil for the
// file store, so Open makes the home's own as the command line has it,
// or a new memory store, shared by the rig's sessions (a resume finds
// the session there).
func (k storeKind) store() transcript.Store {
	if k == onMemory {
		return transcript.NewMemStore()
	}
	return nil
}

// stored returns the bytes of a's transcript as its store holds them.
func stored(t *testing.T, a *agent.Agent) []byte {
	t.Helper()
	return storedIn(t, a.Store(), a.ID())
}

func storedIn(t *testing.T, s transcript.Store, id string) []byte {
	t.Helper()
	src, err := s.OpenSource(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedEntries returns the entries of a's transcript as its store holds
// them.
func storedEntries(t *testing.T, a *agent.Agent) []transcript.Entry {
	t.Helper()
	return transcripttest.ReadAll(t, a.Store(), a.ID())
}

// sidecarsOf returns the files the store keeps beside a's transcript.
func sidecarsOf(t *testing.T, a *agent.Agent) transcript.Sidecars {
	t.Helper()
	sc, ok := a.Store().(transcript.Sidecars)
	if !ok {
		t.Fatalf("the store %T keeps no files beside its transcripts", a.Store())
	}
	return sc
}

// sidecarNames returns the names of the files stored beside a's
// transcript that start with prefix, sorted.
func sidecarNames(t *testing.T, a *agent.Agent, prefix string) []string {
	t.Helper()
	names, err := sidecarsOf(t, a).ListSidecars(t.Context(), a.ID())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// storedSidecar returns the file stored beside a's transcript as name.
func storedSidecar(t *testing.T, a *agent.Agent, name string) []byte {
	t.Helper()
	b, err := sidecarsOf(t, a).ReadSidecar(t.Context(), a.ID(), name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// subagentLogs returns the store of a's subagent transcripts and their
// names in it (agent-<id>), sorted.
func subagentLogs(t *testing.T, a *agent.Agent) (transcript.Store, []string) {
	t.Helper()
	logs, ok := transcript.SidecarStore(a.Store(), a.ID(), agent.SubagentsDir)
	if !ok {
		t.Fatalf("the store %T keeps no subagent transcripts", a.Store())
	}
	infos, err := logs.Sessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.ID)
	}
	slices.Sort(names)
	return logs, names
}

// projectDir returns the folder that holds a's session folder: the
// home's project folder on the file store, the working copy's root on
// another (what a golden file writes as /HOME/projects/PROJECT).
func projectDir(a *agent.Agent) string { return filepath.Dir(a.SessionDir()) }

// copyStore returns a copy of a memory store's sessions and their files.
func copyStore(t *testing.T, from transcript.Store) transcript.Store {
	t.Helper()
	to := transcript.NewMemStore()
	infos, err := from.Sessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sc := from.(transcript.Sidecars)
	for _, in := range infos {
		to.AppendRaw(in.ID, storedIn(t, from, in.ID))
		names, err := sc.ListSidecars(t.Context(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, err := sc.ReadSidecar(t.Context(), in.ID, n)
			if err == nil {
				err = to.WriteSidecar(t.Context(), in.ID, n, b)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return to
}

// fixedDir returns a new empty folder whose path has the same length in
// every test and subtest (t.TempDir's holds the test's name), removed
// when the test ends: the token counts a golden shows depend on the
// length of the paths the prompt names, not on which store a test runs.
func fixedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("cairn-test-%016x", rand.Uint64()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
