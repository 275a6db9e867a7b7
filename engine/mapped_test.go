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
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestMappedHistoryOfACutFile resumes a transcript whose large tool result
// a load kept in the file's mapping: the request carries the file's bytes
// as they were, and once the file is cut shorter than the result the turn
// fails with an error naming it, sending nothing (reading the result
// would kill the process).
func TestMappedHistoryOfACutFile(t *testing.T) {
	file, big := transcripttest.BigResult("s", "/proj", "u3")
	for _, cut := range []bool{false, true} {
		t.Run(fmt.Sprintf("cut=%v", cut), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, file, 0o600); err != nil {
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
