package settings_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/settings"
)

func readLocal(t *testing.T, project string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(settings.LocalPath(project))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return doc
}

// TestEditLocalNull: a file holding null is an empty object, as
// settings.Load reads it, not a nil map edit writes into.
func TestEditLocalNull(t *testing.T) {
	project := t.TempDir()
	path := settings.LocalPath(project)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := settings.EditLocal(project, func(doc map[string]json.RawMessage) error {
		doc["enableAllProjectMcpServers"] = json.RawMessage("true")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if doc := readLocal(t, project); string(doc["enableAllProjectMcpServers"]) != "true" {
		t.Errorf("file %v", doc)
	}
}

// TestEditLocalConcurrent: edits made at the same time (two sessions
// answering "don't ask again", `cairn mcp approve` beside a session) are
// all kept; none reads the file while another is between its read and its
// write.
func TestEditLocalConcurrent(t *testing.T) {
	project := t.TempDir()
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := settings.EditLocal(project, func(doc map[string]json.RawMessage) error {
				doc[fmt.Sprintf("key%d", i)] = json.RawMessage("true")
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if doc := readLocal(t, project); len(doc) != n {
		t.Errorf("%d of %d edits kept: %v", len(doc), n, doc)
	}
}
