package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// summary is the part of an outcome the event tests compare.
type summary struct {
	Blocked    bool
	Reason     string
	Stop       bool
	StopReason string
	Context    []string
	Messages   []string
}

func summarize(o Outcome) summary {
	return summary{o.Blocked, o.Reason, o.Stop, o.StopReason, o.Context, o.Messages}
}

func TestPreToolUse(t *testing.T) {
	type want struct {
		Decision     Decision
		UpdatedInput string
		Outcome      summary
	}
	tests := []struct {
		name  string
		hooks []hookSpec
		want  want
	}{
		{
			name:  "exit 2 denies with stderr",
			hooks: []hookSpec{{event: PreToolUse, matcher: "Bash", script: "echo 'rm is not allowed here' >&2; exit 2"}},
			want:  want{Decision: Deny, Outcome: summary{Blocked: true, Reason: "rm is not allowed here"}},
		},
		{
			name:  "JSON deny",
			hooks: []hookSpec{{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}'`}},
			want:  want{Decision: Deny, Outcome: summary{Blocked: true, Reason: "policy"}},
		},
		{
			name:  "JSON allow with a new input",
			hooks: []hookSpec{{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"command":"ls -la"}}}'`}},
			want:  want{Decision: Allow, UpdatedInput: `{"command":"ls -la"}`, Outcome: summary{Reason: "safe"}},
		},
		{
			name:  "ask",
			hooks: []hookSpec{{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check with a person"}}'`}},
			want:  want{Decision: Ask, Outcome: summary{Reason: "check with a person"}},
		},
		{
			name:  "older spellings approve and block",
			hooks: []hookSpec{{event: PreToolUse, script: `echo '{"decision":"approve","reason":"fine"}'`}, {event: PreToolUse, script: `echo '{"decision":"block","reason":"not fine"}'`}},
			want:  want{Decision: Deny, Outcome: summary{Blocked: true, Reason: "not fine"}},
		},
		{
			name: "deny beats ask beats allow",
			hooks: []hookSpec{
				{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"a"}}'`},
				{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"b"}}'`},
				{event: PreToolUse, script: "echo c >&2; exit 2"},
				{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"d"}}'`},
			},
			want: want{Decision: Deny, Outcome: summary{Blocked: true, Reason: "c\nd"}},
		},
		{
			name:  "a matcher for another tool does not run",
			hooks: []hookSpec{{event: PreToolUse, matcher: "Edit|Write", script: "exit 2"}},
			want:  want{},
		},
		{
			name:  "a regular expression matcher",
			hooks: []hookSpec{{event: PreToolUse, matcher: "^Ba", script: "echo regex >&2; exit 2"}},
			want:  want{Decision: Deny, Outcome: summary{Blocked: true, Reason: "regex"}},
		},
		{
			name:  "continue false, a system message and context",
			hooks: []hookSpec{{event: PreToolUse, script: `echo '{"continue":false,"stopReason":"done for today","systemMessage":"careful","hookSpecificOutput":{"additionalContext":"the build is slow"}}'`}},
			want: want{Outcome: summary{Stop: true, StopReason: "done for today", Context: []string{"the build is slow"},
				Messages: []string{"PreToolUse:Bash hook: careful"}}},
		},
		{
			name:  "a failing hook is only reported",
			hooks: []hookSpec{{event: PreToolUse, script: "echo oops >&2; exit 1"}},
			want:  want{Outcome: summary{Messages: []string{`PreToolUse:Bash hook "\"$CLAUDE_PROJECT_DIR\"/hook0.sh" failed with exit code 1: oops`}}},
		},
		{
			name: "fields for another event and bad values are ignored",
			hooks: []hookSpec{
				{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}'`},
				{event: PreToolUse, script: `echo '{"hookSpecificOutput":{"permissionDecision":"maybe","updatedInput":"rm -rf /"}}'`},
			},
			want: want{Outcome: summary{Messages: []string{
				`PreToolUse:Bash hook "\"$CLAUDE_PROJECT_DIR\"/hook0.sh" answered hookSpecificOutput for PostToolUse while running for PreToolUse; those fields are ignored`,
				`PreToolUse:Bash hook "\"$CLAUDE_PROJECT_DIR\"/hook1.sh" answered permissionDecision "maybe"; only allow, deny and ask mean something, so it is ignored`,
				`PreToolUse:Bash hook "\"$CLAUDE_PROJECT_DIR\"/hook1.sh" returned an updatedInput that is not a JSON object; it is ignored`,
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := project(t, tt.hooks...)
			o := r.PreToolUse(t.Context(), ToolCall{Name: "Bash", ID: "toolu_1", Input: json.RawMessage(`{"command":"rm -rf build"}`)})
			got := want{Decision: o.Decision, UpdatedInput: string(o.UpdatedInput), Outcome: summarize(o.Outcome)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPostToolUse(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		want    summary
		content []string // the result's text blocks after Apply
	}{
		{
			name:    "exit 2 is feedback for the model",
			script:  "echo 'lint: missing semicolon' >&2; exit 2",
			want:    summary{Blocked: true, Reason: "lint: missing semicolon"},
			content: []string{"done", "PostToolUse:Edit hook feedback on this result: lint: missing semicolon"},
		},
		{
			name:    "decision block with a reason",
			script:  `echo '{"decision":"block","reason":"tests fail"}'`,
			want:    summary{Blocked: true, Reason: "tests fail"},
			content: []string{"done", "PostToolUse:Edit hook feedback on this result: tests fail"},
		},
		{
			name:    "additional context",
			script:  `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted with gofmt"}}'`,
			want:    summary{Context: []string{"formatted with gofmt"}},
			content: []string{"done", "<system-reminder>\nPostToolUse:Edit hook additional context: formatted with gofmt\n</system-reminder>"},
		},
		{
			name:    "plain stdout is not for the model",
			script:  "echo formatted",
			content: []string{"done"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := project(t, hookSpec{event: PostToolUse, matcher: "Edit", script: tt.script})
			o := r.PostToolUse(t.Context(), ToolCall{Name: "Edit", ID: "toolu_1", Input: json.RawMessage(`{}`)}, map[string]any{"filePath": "/a.go"})
			if diff := cmp.Diff(tt.want, summarize(o.Outcome)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			res := o.Apply(tool.Text("done"))
			var texts []string
			for _, b := range res.Content {
				texts = append(texts, b.Text)
			}
			if diff := cmp.Diff(tt.content, texts); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUserPromptSubmit(t *testing.T) {
	tests := []struct {
		name   string
		hooks  []hookSpec
		want   summary
		render string // the attachment's rendered text; "" for none
	}{
		{
			name:   "plain stdout and additionalContext are context",
			hooks:  []hookSpec{{event: UserPromptSubmit, script: "echo 'branch: main'"}, {event: UserPromptSubmit, script: `echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ticket ABC-1"}}'`}},
			want:   summary{Context: []string{"branch: main", "ticket ABC-1"}},
			render: "<system-reminder>\nUserPromptSubmit hook additional context: branch: main\nticket ABC-1\n</system-reminder>",
		},
		{
			name:  "exit 2 blocks",
			hooks: []hookSpec{{event: UserPromptSubmit, script: "echo 'no secrets in prompts' >&2; exit 2"}},
			want:  summary{Blocked: true, Reason: "no secrets in prompts"},
		},
		{
			name:  "decision block",
			hooks: []hookSpec{{event: UserPromptSubmit, script: `echo '{"decision":"block","reason":"not today"}'`}},
			want:  summary{Blocked: true, Reason: "not today"},
		},
		{
			name:   "matchers do not apply",
			hooks:  []hookSpec{{event: UserPromptSubmit, matcher: "Bash", script: "echo context"}},
			want:   summary{Context: []string{"context"}},
			render: "<system-reminder>\nUserPromptSubmit hook additional context: context\n</system-reminder>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := project(t, tt.hooks...)
			o := r.UserPromptSubmit(t.Context(), "fix it")
			if diff := cmp.Diff(tt.want, summarize(o.Outcome)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			a, ok := o.Attachment()
			if ok != (tt.render != "") {
				t.Fatalf("attachment: %v", ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff([]model.Block{model.TextBlock(tt.render)}, a.Rendered); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
			if a.Type != "hook_additional_context" || a.Data["hookName"] != "UserPromptSubmit" || a.Data["hookEvent"] != "UserPromptSubmit" {
				t.Errorf("attachment %+v", a)
			}
		})
	}
}

func TestSessionStart(t *testing.T) {
	r, _ := project(t,
		hookSpec{event: SessionStart, matcher: "startup", script: "echo fresh"},
		hookSpec{event: SessionStart, matcher: "resume", script: "echo again"},
		hookSpec{event: SessionStart, script: "echo cannot block >&2; exit 2"},
	)
	o := r.SessionStart(t.Context(), SourceResume, "claude-x")
	want := summary{Context: []string{"again"}, Messages: []string{`SessionStart:resume hook "\"$CLAUDE_PROJECT_DIR\"/hook2.sh" exited with code 2: cannot block`}}
	if diff := cmp.Diff(want, summarize(o.Outcome)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if a, ok := o.Attachment(); !ok || a.Data["hookName"] != "SessionStart:resume" {
		t.Errorf("attachment %+v, %v", a, ok)
	}
}

func TestStop(t *testing.T) {
	script := `if grep -q '"stop_hook_active":true' ; then exit 0; fi; echo '{"decision":"block","reason":"run the tests first"}'`
	r, _ := project(t, hookSpec{event: Stop, script: script})
	o := r.Stop(t.Context(), false, "All done.")
	if diff := cmp.Diff(summary{Blocked: true, Reason: "run the tests first"}, summarize(o.Outcome)); diff != "" {
		t.Errorf("first stop (-want +got):\n%s", diff)
	}
	if o := r.Stop(t.Context(), true, "Tests pass."); o.Blocked {
		t.Errorf("second stop blocked: %+v", o)
	}
}

// TestSubagentStop: the Stop hook's answers, for a subagent, chosen by
// its type; the second stop (stop_hook_active) lets it end.
func TestSubagentStop(t *testing.T) {
	script := `if grep -q '"stop_hook_active":true' ; then exit 0; fi; echo 'cite the line numbers' >&2; exit 2`
	r, _ := project(t, hookSpec{event: SubagentStop, matcher: "reviewer", script: script})
	a := Subagent{ID: "a1b2c3d4", Type: "reviewer", TranscriptPath: "/t/sess-1/subagents/agent-a1b2c3d4.jsonl"}
	o := r.SubagentStop(t.Context(), a, false, "Looks fine.")
	if diff := cmp.Diff(summary{Blocked: true, Reason: "cite the line numbers"}, summarize(o.Outcome)); diff != "" {
		t.Errorf("first stop (-want +got):\n%s", diff)
	}
	if o.Name != "SubagentStop:reviewer" {
		t.Errorf("name %q", o.Name)
	}
	if o := r.SubagentStop(t.Context(), a, true, "Fine: a.go:12."); o.Blocked {
		t.Errorf("second stop blocked: %+v", o)
	}
	a.Type = "general-purpose"
	if o := r.SubagentStop(t.Context(), a, false, "Done."); o.Ran() {
		t.Errorf("a hook for reviewers ran for %s: %+v", a.Type, o)
	}
}

// TestSubagentStart: additionalContext is for the subagent; exit 2
// cannot block a start and is only reported.
func TestSubagentStart(t *testing.T) {
	r, _ := project(t,
		hookSpec{event: SubagentStart, matcher: "Explore|reviewer", script: `echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"the style guide is STYLE.md"}}'`},
		hookSpec{event: SubagentStart, script: "echo 'plain text is not context'"},
		hookSpec{event: SubagentStart, matcher: "reviewer", script: "echo no >&2; exit 2"},
	)
	o := r.SubagentStart(t.Context(), Subagent{ID: "a1", Type: "reviewer"})
	want := summary{
		Context:  []string{"the style guide is STYLE.md"},
		Messages: []string{`SubagentStart:reviewer hook "\"$CLAUDE_PROJECT_DIR\"/hook2.sh" exited with code 2: no`},
	}
	if diff := cmp.Diff(want, summarize(o.Outcome)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if a, ok := o.Attachment(); !ok || !strings.Contains(a.Rendered[0].Text, "the style guide is STYLE.md") {
		t.Errorf("attachment %+v", a)
	}
}

func TestPreCompact(t *testing.T) {
	r, _ := project(t,
		hookSpec{event: PreCompact, matcher: "manual", script: "echo 'keep the API decisions'"},
		hookSpec{event: PreCompact, matcher: "manual", script: "echo 'and the todo list'"},
		hookSpec{event: PreCompact, matcher: "auto", script: "echo 'not now' >&2; exit 2"},
	)
	o := r.PreCompact(t.Context(), TriggerManual, "focus on tests")
	if o.Blocked || o.Instructions != "keep the API decisions\n\nand the todo list" {
		t.Errorf("manual: %+v", o)
	}
	o = r.PreCompact(t.Context(), TriggerAuto, "")
	if !o.Blocked || o.Reason != "not now" || o.Instructions != "" {
		t.Errorf("auto: %+v", o)
	}
}

// TestInputs checks the JSON each event's hooks get on stdin.
func TestInputs(t *testing.T) {
	common := func(event string) map[string]any {
		return map[string]any{"session_id": "sess-1", "transcript_path": "/t/sess-1.jsonl", "permission_mode": "default", "hook_event_name": event}
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		event Event
		fire  func(r *Runner)
		want  map[string]any
	}{
		{PreToolUse, func(r *Runner) {
			r.PreToolUse(t.Context(), ToolCall{Name: "Bash", ID: "toolu_1", Input: json.RawMessage(`{"command":"ls"}`)})
		}, with(common("PreToolUse"), "tool_name", "Bash", "tool_use_id", "toolu_1", "tool_input", map[string]any{"command": "ls"})},
		{PostToolUse, func(r *Runner) {
			r.PostToolUse(t.Context(), ToolCall{Name: "Bash", ID: "toolu_1", Input: json.RawMessage(`{"command":"ls"}`)}, map[string]any{"stdout": "a\n"})
		}, with(common("PostToolUse"), "tool_name", "Bash", "tool_use_id", "toolu_1", "tool_input", map[string]any{"command": "ls"}, "tool_response", map[string]any{"stdout": "a\n"})},
		{UserPromptSubmit, func(r *Runner) { r.UserPromptSubmit(t.Context(), "hello <b>") }, with(common("UserPromptSubmit"), "prompt", "hello <b>")},
		{SessionStart, func(r *Runner) { r.SessionStart(t.Context(), SourceStartup, "claude-x") }, with(common("SessionStart"), "source", "startup", "model", "claude-x")},
		{Stop, func(r *Runner) { r.Stop(t.Context(), true, "bye") }, with(common("Stop"), "stop_hook_active", true, "last_assistant_message", "bye")},
		{PreCompact, func(r *Runner) { r.PreCompact(t.Context(), TriggerManual, "keep tests") }, with(common("PreCompact"), "trigger", "manual", "custom_instructions", "keep tests")},
		{PostCompact, func(r *Runner) { r.PostCompact(t.Context(), TriggerAuto, "We fixed the bug.") }, with(common("PostCompact"), "trigger", "auto", "compact_summary", "We fixed the bug.")},
		{SubagentStart, func(r *Runner) {
			r.SubagentStart(t.Context(), Subagent{ID: "a1", Type: "Explore", TranscriptPath: "/t/a1.jsonl"})
		}, with(common("SubagentStart"), "agent_id", "a1", "agent_type", "Explore")},
		{SubagentStop, func(r *Runner) {
			r.SubagentStop(t.Context(), Subagent{ID: "a1", Type: "Explore", TranscriptPath: "/t/a1.jsonl"}, true, "found it")
		}, with(common("SubagentStop"), "stop_hook_active", true, "agent_id", "a1", "agent_type", "Explore", "agent_transcript_path", "/t/a1.jsonl", "last_assistant_message", "found it")},
	}
	for _, tt := range tests {
		t.Run(string(tt.event), func(t *testing.T) {
			r, dir := project(t, hookSpec{event: tt.event, script: `cat > "$CLAUDE_PROJECT_DIR/input.json"`})
			tt.fire(r)
			b, err := os.ReadFile(filepath.Join(dir, "input.json"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `\u003c`) {
				t.Errorf("input escapes HTML: %s", b)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("input is not JSON: %s", b)
			}
			tt.want["cwd"] = dir
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
		})
	}
}
