package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// TestMappedHistoryOfACutFile resumes a transcript whose large tool result
// a load kept in the file's mapping: the request carries the file's bytes
// as they were, and once the file is cut shorter than the result the turn
// fails with an error naming it, sending nothing (reading the result
// would kill the process).
func TestMappedHistoryOfACutFile(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 6<<20/16) // more than a load maps at least
	env := `"sessionId":"s","cwd":"/proj","version":"2.1.197","timestamp":"2026-12-01T09:00:00.000Z"`
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,` + env + `,"message":{"role":"user","content":"read it"}}`,
		`{"type":"assistant","uuid":"u2","parentUuid":"u1",` + env + `,"message":{"id":"m1","role":"assistant","model":"test-model","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]}}`,
		`{"type":"user","uuid":"u3","parentUuid":"u2",` + env + `,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + string(jsonw.String(big)) + `}]}}`,
		`{"type":"assistant","uuid":"u4","parentUuid":"u3",` + env + `,"message":{"id":"m2","role":"assistant","model":"test-model","content":[{"type":"text","text":"done"}]}}`,
	}
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("cut=%v", cut), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			src, err := transcript.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			conv, err := transcript.Load(t.Context(), src, transcript.LoadOptions{Map: true})
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			history := conv.Messages()
			result := history[2].Content[0].Content
			if !filemap.Holds(result) {
				t.Fatal("the tool result is not a slice of the file's mapping")
			}
			if cut {
				if err := os.Truncate(path, 1<<20); err != nil {
					t.Fatal(err)
				}
			}
			m := script(say("ok"))
			h := newHarness(t, m, nil, nil)
			h.sess.SetHistory(history)
			_, err = h.run(t, t.Context(), "go on")
			if !cut {
				if err != nil {
					t.Fatal(err)
				}
				sent := m.Requests()[0].Messages[2].Content[0]
				if sent.Type != model.BlockToolResult || !bytes.Equal(sent.Content, jsonw.String(big)) {
					t.Fatalf("the request's tool result is not the file's (%d bytes)", len(sent.Content))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("a turn over a history from a file cut shorter: %v, want an error naming %s", err, path)
			}
			if n := len(m.Requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
}
