package memory

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// TestWriteGate: as the first of the session's gates, WriteGate refuses
// an index write over the limits with what to do, and lets every other
// call on to the gates after it.
func TestWriteGate(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, IndexName)
	os.WriteFile(index, []byte("- [a](a.md) — a\n"), 0o644)
	in := func(v map[string]any) json.RawMessage { b, _ := json.Marshal(v); return b }
	var after []string
	next := middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		after = append(after, call.Name)
		return engine.Verdict{Allow: true, Record: "next"}
	})
	g := middleware.Gates(WriteGate{Dir: dir}, next)
	tooLong := model.Block{Name: "Write", Input: in(map[string]any{"file_path": index, "content": strings.Repeat("x\n", 201)})}
	if v := g.Check(t.Context(), nil, tooLong); v.Allow || !strings.Contains(v.Reason, IndexName) {
		t.Errorf("an index over the limit: %+v", v)
	}
	fine := model.Block{Name: "Write", Input: in(map[string]any{"file_path": index, "content": "- [b](b.md) — b\n"})}
	if v := g.Check(t.Context(), nil, fine); !v.Allow || v.Record != "next" {
		t.Errorf("an index within the limits: %+v, want the next gate's verdict", v)
	}
	if len(after) != 1 {
		t.Errorf("the next gate was asked about %v, want only the write within the limits", after)
	}
}
