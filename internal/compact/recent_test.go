package compact

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// stamp writes a file named in its input; only its PathToucher tells
// compaction so.
type stamp struct{}

func (stamp) Spec() model.ToolSpec                 { return model.ToolSpec{Name: "Stamp"} }
func (stamp) ReadOnly(json.RawMessage) bool        { return false }
func (stamp) Destructive(json.RawMessage) bool     { return false }
func (stamp) ConcurrencySafe(json.RawMessage) bool { return false }
func (stamp) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("stamped"), nil
}
func (stamp) TouchedPaths(in json.RawMessage) []tool.PathUse {
	var a struct{ To, In string }
	json.Unmarshal(in, &a)
	return []tool.PathUse{{Path: a.To, Write: true}, {Path: a.In, Folder: true}}
}

// TestRecentFilesAsksTheTools: the files re-read after a compaction are
// those the tools say their calls worked on — whatever the tools are
// called, relative paths from the working directory, folders left out.
func TestRecentFilesAsksTheTools(t *testing.T) {
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("stamped text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(stamp{})
	if err != nil {
		t.Fatal(err)
	}
	history := []model.Message{{Role: model.RoleAssistant, Content: []model.Block{
		{Type: model.BlockToolUse, ID: "t1", Name: "Stamp", Input: json.RawMessage(`{"To":"a.txt","In":"."}`)},
		{Type: model.BlockToolUse, ID: "t2", Name: "Unknown", Input: json.RawMessage(`{"file_path":"a.txt"}`)},
	}}}
	got := recentFiles(history, cwd, reg)
	if len(got) != 1 || got[0].Data["filename"] != filepath.Join(cwd, "a.txt") || !strings.Contains(got[0].Rendered[1].Text, "stamped text") {
		t.Fatalf("re-read %+v, want a.txt alone", got)
	}
	if got := recentFiles(history, cwd, nil); got != nil {
		t.Errorf("with no tools known, re-read %+v", got)
	}
}
