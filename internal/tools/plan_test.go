package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// fakeModes is a PlanModes whose answer the test sets.
type fakeModes struct {
	mu       sync.Mutex
	plan     bool
	review   PlanReview
	reviewed []string // the plans put to review
}

func (f *fakeModes) InPlanMode() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plan
}

func (f *fakeModes) EnterPlanMode(context.Context) error {
	f.mu.Lock()
	f.plan = true
	f.mu.Unlock()
	return nil
}

func (f *fakeModes) ReviewPlan(ctx context.Context, plan, path string) (PlanReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return PlanReview{}, err
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != plan {
		return PlanReview{}, fmt.Errorf("the plan was not saved before the review: %q, %v", b, err)
	}
	f.reviewed = append(f.reviewed, plan)
	if f.review.Approved {
		f.plan = false
	}
	return f.review, nil
}

const planText = "# Plan\n\n1. Change the parser.\n2. Run the tests.\n"

func TestExitPlanMode(t *testing.T) {
	tests := []struct {
		name    string
		review  PlanReview
		isError bool
		endTurn string
		says    string
	}{
		{"approved", PlanReview{Approved: true, Mode: "acceptEdits", Feedback: "mind the tests"}, false, "", "approved the plan, and the session has left plan mode (it is in acceptEdits mode now)"},
		{"no one to approve it", PlanReview{EndTurn: true}, false, planText, "returned as the result of this run"},
		{"rejected with a note", PlanReview{Feedback: "use a table instead"}, true, "", "The user said: use a table instead"},
		{"rejected", PlanReview{}, true, "", "Ask the user what to change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plans", "quiet-river.md")
			plan, modes := NewPlan(path, ""), &fakeModes{plan: true, review: tt.review}
			r := call(t, ExitPlanMode{Plan: plan, Modes: modes}, newEnv(t), map[string]any{"plan": planText})
			got := text(t, r)
			if r.IsError != tt.isError || r.EndTurn != tt.endTurn || !strings.Contains(got, tt.says) {
				t.Errorf("result %q (error %v, ends the turn with %q)", got, r.IsError, r.EndTurn)
			}
			if tt.review.Feedback != "" && !strings.Contains(got, tt.review.Feedback) {
				t.Errorf("the person's words are not passed on: %q", got)
			}
			if diff := cmp.Diff([]string{planText}, modes.reviewed); diff != "" {
				t.Errorf("reviewed (-want +got):\n%s", diff)
			}
			if plan.Content() != planText {
				t.Errorf("the session holds %q", plan.Content())
			}
			if diff := cmp.Diff(exitPlanDetail{Plan: planText, FilePath: path}, r.Detail); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExitPlanModeRefused(t *testing.T) {
	env := newEnv(t)
	plan := NewPlan(filepath.Join(t.TempDir(), "p.md"), "")
	for _, tt := range []struct {
		name  string
		modes *fakeModes
		input any
		says  string
	}{
		{"not in plan mode", &fakeModes{}, map[string]any{"plan": planText}, "not in plan mode"},
		{"no plan", &fakeModes{plan: true}, map[string]any{}, `required parameter "plan"`},
		{"an empty plan", &fakeModes{plan: true}, map[string]any{"plan": "  "}, `"plan" is empty`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, ExitPlanMode{Plan: plan, Modes: tt.modes}, env, tt.input)
			if !r.IsError || !strings.Contains(text(t, r), tt.says) || len(tt.modes.reviewed) > 0 {
				t.Errorf("result %q, reviewed %q", text(t, r), tt.modes.reviewed)
			}
		})
	}
	if _, err := (ExitPlanMode{}).Run(context.Background(), env, json.RawMessage(`{"plan":"x"}`)); err == nil {
		t.Error("an ExitPlanMode without a session ran")
	}
	// A review cut short leaves the call interrupted, not approved.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (ExitPlanMode{Plan: plan, Modes: &fakeModes{plan: true}}).Run(ctx, env, json.RawMessage(`{"plan":"x"}`)); err == nil {
		t.Error("a cancelled review returned a result")
	}
}

func TestEnterPlanMode(t *testing.T) {
	modes := &fakeModes{}
	r := call(t, EnterPlanMode{Modes: modes}, newEnv(t), map[string]any{})
	if r.IsError || !modes.InPlanMode() || !strings.Contains(text(t, r), "ExitPlanMode") {
		t.Errorf("result %q, in plan mode %v", text(t, r), modes.InPlanMode())
	}
	if r := call(t, EnterPlanMode{Modes: modes}, newEnv(t), map[string]any{}); !strings.Contains(text(t, r), "already in plan mode") {
		t.Errorf("again: %q", text(t, r))
	}
	if _, err := (EnterPlanMode{}).Run(context.Background(), newEnv(t), json.RawMessage(`{}`)); err == nil {
		t.Error("an EnterPlanMode without a session ran")
	}
}

func TestPlanToolsSafety(t *testing.T) {
	in := json.RawMessage(`{"plan":"x"}`)
	for _, tl := range []interface {
		ReadOnly(json.RawMessage) bool
		Destructive(json.RawMessage) bool
		ConcurrencySafe(json.RawMessage) bool
	}{ExitPlanMode{}, EnterPlanMode{}} {
		if !tl.ReadOnly(in) || tl.Destructive(in) || tl.ConcurrencySafe(in) {
			t.Errorf("%T must be read-only (it runs in plan mode), not destructive and not concurrency-safe", tl)
		}
	}
}

func TestPlanSurvivors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plans", "p.md")
	if got := NewPlan(path, "").Survivors(context.Background()); got != nil {
		t.Errorf("no plan survives as %v", got)
	}
	plan := NewPlan(path, planText)
	atts := plan.Survivors(context.Background())
	if len(atts) != 1 || atts[0].Type != "plan_file_reference" {
		t.Fatalf("survivors = %+v", atts)
	}
	a := atts[0]
	if diff := cmp.Diff(map[string]any{"planFilePath": path, "planContent": planText}, a.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	// Rendered as Claude Code renders the attachment: a resume of a line
	// without its rendered text shows the model the same.
	att, _ := transcript.EncodeAttachment(a.Type, a.Data, nil)
	line, err := json.Marshal(transcript.Entry{Type: transcript.TypeAttachment, UUID: "u1", Attachment: att})
	if err != nil {
		t.Fatal(err)
	}
	e, err := transcript.DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Unknown()["rendered"]; ok {
		t.Fatal("the line carries its rendering")
	}
	conv := transcript.Conversation{Entries: []*transcript.Entry{&e}}
	msgs := conv.Messages()
	if len(msgs) != 1 || len(msgs[0].Content) != 1 || msgs[0].Content[0].Text != a.Rendered[0].Text {
		t.Errorf("Claude Code's rendering %+v, cairn's %q", msgs, a.Rendered[0].Text)
	}
	if !strings.Contains(a.Rendered[0].Text, planText) || !strings.Contains(a.Rendered[0].Text, path) {
		t.Errorf("rendered %q", a.Rendered[0].Text)
	}
	// The file, which the person may edit, is the plan.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# Edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := plan.Survivors(context.Background())[0].Data["planContent"]; got != "# Edited\n" {
		t.Errorf("survives as %q, not the file's content", got)
	}
}

// Transcript lines for TestLatestPlan.
func planCall(id, plan string) string {
	in, _ := json.Marshal(map[string]string{"plan": plan})
	return `{"type":"assistant","uuid":"a-` + id + `","message":{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"ExitPlanMode","input":` + string(in) + `}]}}`
}

func planResult(id, plan, path string) string {
	d, _ := json.Marshal(exitPlanDetail{Plan: plan, FilePath: path})
	return fmt.Sprintf(`{"type":"user","uuid":"r-%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok"}]},"toolUseResult":%s}`, id, id, d)
}

func planRefused(id string) string {
	return fmt.Sprintf(`{"type":"user","uuid":"r-%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"denied","is_error":true}]}}`, id, id)
}

func TestLatestPlan(t *testing.T) {
	tests := []struct {
		name              string
		lines             []string
		wantPath, wantHas string
	}{
		{"none", []string{`{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}`}, "", ""},
		{"a saved plan", []string{planCall("t1", "plan A"), planResult("t1", "plan A", "/h/plans/a.md")}, "/h/plans/a.md", "plan A"},
		{"the newest", []string{planCall("t1", "plan A"), planResult("t1", "plan A", "/p.md"), planCall("t2", "plan B"), planResult("t2", "plan B", "/p.md")}, "/p.md", "plan B"},
		{"a call that never ran is passed over", []string{planCall("t1", "plan A"), planResult("t1", "plan A", "/p.md"), planCall("t2", "plan B"), planRefused("t2")}, "/p.md", "plan A"},
		{"the attachment after a compaction", []string{`{"type":"attachment","uuid":"x","attachment":{"type":"plan_file_reference","planFilePath":"/c.md","planContent":"plan C"}}`}, "/c.md", "plan C"},
		{"a call after the attachment", []string{`{"type":"attachment","uuid":"x","attachment":{"type":"plan_file_reference","planFilePath":"/c.md","planContent":"plan C"}}`, planCall("t1", "plan A"), planResult("t1", "plan A", "/p.md")}, "/p.md", "plan A"},
		{"another tool's detail", []string{`{"type":"assistant","uuid":"a","message":{"role":"assistant","content":[{"type":"tool_use","id":"t9","name":"Other","input":{}}]}}`, planResult("t9", "not a plan", "/x.md")}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []*transcript.Entry
			for _, l := range tt.lines {
				e, err := transcript.DecodeEntry([]byte(l))
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				entries = append(entries, &e)
			}
			path, content, ok := LatestPlan(entries)
			if path != tt.wantPath || content != tt.wantHas || ok != (tt.wantHas != "") {
				t.Errorf("LatestPlan = %q, %q, %v", path, content, ok)
			}
		})
	}
}

// The restored plan renders for the model on its own, as recorded.
func TestPlanAttachmentRenders(t *testing.T) {
	a := NewPlan("/h/plans/p.md", planText).Survivors(context.Background())[0]
	conv := transcript.Conversation{Entries: []*transcript.Entry{ptr(recorded(t, a))}}
	msgs := conv.Messages()
	if len(msgs) != 1 || msgs[0].Role != model.RoleUser || !strings.Contains(msgs[0].Content[0].Text, "2. Run the tests.") {
		t.Errorf("messages = %+v", msgs)
	}
}
