package governance_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/governance"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// rig is a headless governance in default mode over the hooks of raw
// (settings' "hooks" object), run in a project folder of its own.
type rig struct {
	g       *governance.Governance
	refused *governance.Denials
	cwd     string
	said    *strings.Builder
	halted  []error
	mu      sync.Mutex
}

func newRig(t *testing.T, raw string) *rig {
	t.Helper()
	cwd := t.TempDir()
	cfg := &hook.Config{}
	if w := cfg.Add("settings.json", json.RawMessage(raw)); len(w) != 0 {
		t.Fatalf("hooks: %v", w)
	}
	c, err := permission.New(permission.Options{CairnHome: t.TempDir(), UserHome: t.TempDir(), ProjectDir: cwd, Cwd: cwd, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{refused: &governance.Denials{}, cwd: cwd, said: &strings.Builder{}}
	r.g = governance.New(governance.Options{
		Hooks: cfg, ProjectDir: cwd, Cwd: cwd, Checker: c, Refused: r.refused, Messages: r.said,
		Halt: func(err error) { r.mu.Lock(); r.halted = append(r.halted, err); r.mu.Unlock() },
	})
	return r
}

func lookup(t *testing.T, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools.Core() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no core tool %s", name)
	return nil
}

func preToolUse(matcher, script string) string {
	h, _ := json.Marshal(map[string]any{"PreToolUse": []any{map[string]any{"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": script}}}}})
	return string(h)
}

// TestGate: the PreToolUse hooks decide before the permission check —
// a deny refuses, an allow waives the question headless mode would
// refuse, an updatedInput is what the call runs with — and the refused
// calls are kept for permission_denials.
func TestGate(t *testing.T) {
	allowWithInput := `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"command":"echo rewritten"}}}'`
	for _, tt := range []struct {
		name    string
		hooks   string
		allow   bool
		by      string
		input   string // the input the call runs with, when rewritten
		refused int
	}{
		{"no hook: headless refuses what would ask", `{}`, false, "headless", "", 1},
		{"a hook's deny", preToolUse("Bash", "echo 'not here' >&2; exit 2"), false, "hook", "", 1},
		{"a hook's allow, with a new input", preToolUse("Bash", allowWithInput), true, "hook", `{"command":"echo rewritten"}`, 0},
		{"a hook for another tool", preToolUse("Edit", "exit 2"), false, "headless", "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.hooks)
			var g middleware.Gate = r.g
			call := model.Block{Type: model.BlockToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"touch x"}`)}
			v := g.Check(t.Context(), lookup(t, "Bash"), call)
			if v.Allow != tt.allow || string(v.Input) != tt.input {
				t.Errorf("verdict %+v: want allow %v with input %q", v, tt.allow, tt.input)
			}
			rec, ok := v.Record.(permission.Record)
			if !ok || rec.By != tt.by {
				t.Errorf("recorded %+v, want decided by %q", v.Record, tt.by)
			}
			if got := r.refused.List(); len(got) != tt.refused {
				t.Errorf("refused %v, want %d", got, tt.refused)
			}
		})
	}
}

// TestAfterToolSeesTheInputRun: the PostToolUse hooks get the input the
// call ran with (a PreToolUse hook's), and what they say is added to the
// result; a hook answering "continue": false halts the run.
func TestAfterToolSeesTheInputRun(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "post.json")
	raw, _ := json.Marshal(map[string]any{
		"PreToolUse": []any{map[string]any{"hooks": []any{map[string]any{"type": "command",
			"command": `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}'`}}}},
		"PostToolUse": []any{map[string]any{"hooks": []any{map[string]any{"type": "command",
			"command": "cat > " + seen + `; echo '{"continue":false,"stopReason":"enough","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"POST-CONTEXT"}}'`}}}},
	})
	r := newRig(t, string(raw))
	bash := lookup(t, "Bash")
	call := model.Block{Type: model.BlockToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"touch x"}`)}
	if v := r.g.Check(t.Context(), bash, call); !v.Allow {
		t.Fatalf("refused: %+v", v)
	}
	res := r.g.AfterTool(t.Context(), bash, call, tool.Text("rewritten"))
	data, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		ToolInput json.RawMessage `json:"tool_input"`
	}
	if err := json.Unmarshal(data, &in); err != nil || string(in.ToolInput) != `{"command":"echo rewritten"}` {
		t.Errorf("PostToolUse got %s (%v), want the rewritten input", data, err)
	}
	var text []string
	for _, b := range res.Content {
		text = append(text, b.Text)
	}
	if !strings.Contains(strings.Join(text, "\n"), "POST-CONTEXT") {
		t.Errorf("the result is %q, want the hook's context in it", text)
	}
	var stopped governance.HookStopped
	if len(r.halted) != 1 || !errors.As(r.halted[0], &stopped) || stopped.Reason != "enough" {
		t.Errorf("halted with %v, want the hook's stop", r.halted)
	}
}

// TestStopHooks: a Stop hook that blocks keeps the turn going with its
// reason (a middleware.StopHandler); without one the turn ends.
func TestStopHooks(t *testing.T) {
	stop := func(script string) string {
		h, _ := json.Marshal(map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": script}}}}})
		return string(h)
	}
	for _, tt := range []struct {
		name, hooks, want string
	}{
		{"none", `{}`, ""},
		{"a block", stop("echo 'the tests fail' >&2; exit 2"), "The Stop hook did not let the turn end yet: the tests fail"},
		{"a pass", stop("exit 0"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h middleware.StopHandler = newRig(t, tt.hooks).g
			if diff := cmp.Diff(tt.want, h.BeforeStop(t.Context(), &engine.Result{Text: "done"}, false)); diff != "" {
				t.Errorf("BeforeStop (-want +got):\n%s", diff)
			}
		})
	}
}

// session is a session the hooks are told about.
type session struct{ id, path string }

func (s session) ID() string   { return s.id }
func (s session) Path() string { return s.path }

// TestAttach: hook inputs name the session attached last, and the
// SessionStart context goes with the first prompt only.
func TestAttach(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "prompt.json")
	raw, _ := json.Marshal(map[string]any{
		"SessionStart":     []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo STARTED-CONTEXT"}}}},
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat > " + seen}}}},
	})
	r := newRig(t, string(raw))
	r.g.Attach(session{"first", "/a.jsonl"})
	r.g.Attach(session{"second", "/b.jsonl"})
	if err := r.g.SessionStart(t.Context(), hook.SourceStartup, "m"); err != nil {
		t.Fatal(err)
	}
	prompt := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}
	in, err := r.g.BeforePrompt(t.Context(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Attachments) != 1 || !strings.Contains(in.Attachments[0].Rendered[0].Text, "STARTED-CONTEXT") {
		t.Errorf("the first prompt carries %+v, want the SessionStart context", in.Attachments)
	}
	if again, _ := r.g.BeforePrompt(t.Context(), prompt); len(again.Attachments) != 0 {
		t.Errorf("the second prompt carries %+v", again.Attachments)
	}
	data, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		ID   string `json:"session_id"`
		Path string `json:"transcript_path"`
		Cwd  string `json:"cwd"`
	}
	json.Unmarshal(data, &h)
	if h.ID != "second" || h.Path != "/b.jsonl" || h.Cwd != r.cwd {
		t.Errorf("the hook was told %s", data)
	}
}
