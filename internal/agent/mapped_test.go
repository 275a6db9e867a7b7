package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestMappedResumeOfACutFile resumes a session whose large tool result the
// load keeps in the transcript's mapping (as the terminal UI and a
// headless run do), then cuts the file shorter under it: /compact,
// /summary and /pin of the result's message, which read the history's
// results outside a request, fail with an error naming the file instead
// of killing the process.
func TestMappedResumeOfACutFile(t *testing.T) {
	r := newRig(t, onFile, 0, &script{})
	const id = "3f1c9a52-7b0e-4d6a-9c1e-2a4b6c8d0e1f"
	const result = "8d2f4b6a-1c3e-4a5b-9d7f-0e2c4a6b8d1f" // the uuid of the result's line
	file, _ := transcripttest.BigResult(id, r.cwd, result)
	dir := r.home.ProjectDir(r.cwd)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	a := r.open(t, tokens.Window{}, func(o *agent.Options) { o.Resume, o.MapTranscript = id, true })
	if err := os.Truncate(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Compact(t.Context(), ""); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("/compact over a history from a file cut shorter: %v, want an error naming %s", err, path)
	}
	if _, err := a.Summary(t.Context()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("/summary over a history from a file cut shorter: %v, want an error naming %s", err, path)
	}
	if _, err := a.Pin(t.Context(), result); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("/pin of a result from a file cut shorter: %v, want an error naming %s", err, path)
	}
	if n := len(r.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
