package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// saveTool is a tool that edits files, defined here and nowhere else: it
// says which file a call writes (tool.PathToucher) and that its result
// can be obtained again (tool.Reobtainable), and backs the file up
// before writing, as Env asks of every tool that changes files.
type saveTool struct{}

func (saveTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Save", Description: "writes text to a file",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}}}`)}
}
func (saveTool) ReadOnly(json.RawMessage) bool        { return false }
func (saveTool) Destructive(json.RawMessage) bool     { return false }
func (saveTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (saveTool) Reobtainable() bool                   { return true }

func (saveTool) TouchedPaths(input json.RawMessage) []tool.PathUse {
	var in struct{ Path string }
	if json.Unmarshal(input, &in) != nil || in.Path == "" {
		return nil
	}
	return []tool.PathUse{{Path: in.Path, Write: true}}
}

func (saveTool) Run(_ context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	var in struct{ Path, Text string }
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Errorf("bad input: %v", err), nil
	}
	path := in.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(env.Cwd(), path)
	}
	if env.BeforeChange != nil {
		if err := env.BeforeChange(path); err != nil {
			return tool.Result{}, err
		}
	}
	if err := os.WriteFile(path, []byte(in.Text), 0o644); err != nil {
		return tool.Result{}, err
	}
	return tool.Text("saved " + in.Path + ": " + strings.Repeat("ok ", 400)), nil
}

// TestToolDefinedOutside: a tool that edits files needs nothing outside
// its own definition and the tool list. Edit rules allow and deny its
// calls; the file it wrote is in file history, so a rewind
// would restore it; the instruction file of the folder it wrote in comes
// with its result; and micro-compaction clears its old results.
func TestToolDefinedOutside(t *testing.T) {
	onStores(t, testToolDefinedOutside)
}

func testToolDefinedOutside(t *testing.T, k storeKind) {
	cwd := t.TempDir()
	for _, d := range []string{"notes", "secret"} {
		if err := os.MkdirAll(filepath.Join(cwd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cwd, "notes", "CLAUDE.md"), []byte("Notes are written in lower case."), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "notes", "a.txt"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	checker, err := permission.New(permission.Options{CairnHome: t.TempDir(), UserHome: t.TempDir(), ProjectDir: cwd,
		AllowedTools: []string{"Edit(/notes/**)"}, DisallowedTools: []string{"Edit(/secret/**)"}, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	gate := func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		d := checker.Check(ctx, t, call.Input)
		decisions = append(decisions, string(d.Behavior)+" "+d.Rule)
		return engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason}
	}
	save := func(id, path string) model.Block {
		return modeltest.ToolUse(id, "Save", `{"path":"`+path+`","text":"new"}`)
	}
	m := modeltest.NewScripted(
		modeltest.Call(save("s1", "notes/a.txt")),
		modeltest.Call(save("s2", "secret/b.txt")),
		modeltest.Call(save("s3", "notes/c.txt")),
		modeltest.Call(save("s4", "notes/d.txt")),
		modeltest.Call(save("s5", "notes/e.txt")),
		modeltest.Say("done"),
	)
	home := session.Home{Dir: t.TempDir()}
	a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd, Store: k.store(),
		Instructions: instructions.NewTracker(instructions.Options{Cwd: cwd, Home: home.Dir, Managed: []string{}, ManagedRules: []string{}}), Model: m, ModelName: "claude-test", MaxTokens: 4000,
		Tools: []tool.Tool{saveTool{}}, Entrypoint: "sdk-cli", DisableAutoCompact: true, Middleware: agent.Middleware{Gate: middleware.GateFunc(gate)},
		MicroCompact: compact.MicroConfig{Count: 3, KeepRecent: 1, ClearAtLeast: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, err := range a.Run(t.Context(), "save the notes") {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Permission rules: Edit(...) covers the tool's calls.
	want := []string{"allow Edit(/notes/**)", "deny Edit(/secret/**)", "allow Edit(/notes/**)", "allow Edit(/notes/**)", "allow Edit(/notes/**)"}
	if strings.Join(decisions, "; ") != strings.Join(want, "; ") {
		t.Errorf("decisions %q, want %q", decisions, want)
	}
	if _, err := os.Stat(filepath.Join(cwd, "secret", "b.txt")); err == nil {
		t.Error("the denied call wrote its file")
	}

	// File history: the file it changed goes back on a rewind.
	prompt := a.History()[0].IDs[0]
	plan, err := a.RewindPlan(prompt)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]bool{}
	for _, c := range plan.Changes {
		changed[filepath.Base(c.Path)] = true
	}
	if !changed["a.txt"] || !changed["c.txt"] {
		t.Errorf("a rewind would change %v: the files Save wrote are not in file history", plan.Changes)
	}

	// Touched paths: the folder's instruction file comes with the first
	// result in it.
	reqs := m.Requests()
	first := reqs[1].Messages[len(reqs[1].Messages)-1]
	if !strings.Contains(first.Content[0].ResultText()+first.Text(), "lower case") {
		t.Errorf("the result of the first save does not bring notes/CLAUDE.md: %+v", first.Content)
	}

	// Micro-compaction: old results of the tool are cleared.
	last, _ := json.Marshal(reqs[len(reqs)-1].Messages)
	if !strings.Contains(string(last), compact.ClearedText) {
		t.Error("no result of Save was cleared in the last request")
	}

}
