package tools

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// fakeSubagents answers every call with rep, or err, and remembers the
// calls.
type fakeSubagents struct {
	mu    sync.Mutex
	calls []SubagentCall
	rep   SubagentReport
	err   error
}

func (f *fakeSubagents) Run(_ context.Context, _ *tool.Env, c SubagentCall) (SubagentReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.rep, f.err
}

func testAgents() []subagent.Definition {
	return append(subagent.BuiltIn(), subagent.Definition{Name: "reader", Description: "Reads\nfiles", Tools: []string{"Read", "Grep"}, Prompt: "Read."})
}

func TestTaskSpec(t *testing.T) {
	agents := append(testAgents(),
		subagent.Definition{Name: "runner", Description: "Runs tests", DisallowedTools: []string{"Write", "Edit"}},
		subagent.Definition{Name: "looker", Description: "Looks", Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Bash"}},
	)
	task := NewTask(agents)
	a, b := task.Spec(), task.With(&fakeSubagents{}).Spec()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the spec changed once the session gave its subagents:\n%s", diff)
	}
	for _, want := range []string{"- general-purpose: A general-purpose agent", "(all tools)", "- reader: Reads files (tools: Read, Grep)",
		"- runner: Runs tests (all tools but Write, Edit)", "- looker: Looks (tools: Read)"} {
		if !strings.Contains(a.Description, want) {
			t.Errorf("description lacks %q:\n%s", want, a.Description)
		}
	}
	if a.Name != "Task" || task.ReadOnly(nil) || task.Destructive(nil) || !task.ConcurrencySafe(nil) {
		t.Errorf("Task's name or safety: %s ro=%v de=%v cs=%v", a.Name, task.ReadOnly(nil), task.Destructive(nil), task.ConcurrencySafe(nil))
	}
}

func TestTaskRun(t *testing.T) {
	env := newEnv(t)
	report := SubagentReport{
		AgentID: "1234abcd", Text: "FOUND: it is in a.go", Tokens: 1500, ToolUses: 3, Duration: 2500 * time.Millisecond,
		Usage: model.Usage{InputTokens: 1000, OutputTokens: 500},
	}
	for _, tc := range []struct {
		name    string
		input   string
		rep     SubagentReport
		want    []string // the texts of the result's blocks
		isError bool
		called  string // the agent the runner got
	}{
		{
			name:  "report",
			input: `{"description":"Find it","prompt":"find the parser","subagent_type":"reader"}`,
			rep:   report, called: "reader",
			want: []string{"FOUND: it is in a.go", "agentId: 1234abcd\n<usage>total_tokens: 1500\ntool_uses: 3\nduration_ms: 2500</usage>"},
		},
		{
			name:  "no type is general-purpose",
			input: `{"description":"Find it","prompt":"find the parser"}`,
			rep:   report, called: subagent.GeneralPurpose,
			want: []string{"FOUND: it is in a.go", "agentId: 1234abcd\n<usage>total_tokens: 1500\ntool_uses: 3\nduration_ms: 2500</usage>"},
		},
		{
			name:  "stopped at the turn limit",
			input: `{"description":"Find it","prompt":"find the parser","subagent_type":"reader"}`,
			rep:   SubagentReport{AgentID: "1", MaxTurns: true, Text: "still looking"}, called: "reader",
			want: []string{"The agent was stopped at the turn limit before it finished. Its last message:\n\nstill looking", "agentId: 1\n<usage>total_tokens: 0\ntool_uses: 0\nduration_ms: 0</usage>"},
		},
		{
			name:  "no report",
			input: `{"description":"Find it","prompt":"find the parser","subagent_type":"reader"}`,
			rep:   SubagentReport{AgentID: "1"}, called: "reader",
			want: []string{"The agent ended without a final report.", "agentId: 1\n<usage>total_tokens: 0\ntool_uses: 0\nduration_ms: 0</usage>"},
		},
		{
			name:  "unknown type",
			input: `{"description":"x","prompt":"y","subagent_type":"Explore"}`,
			want:  []string{`<tool_use_error>Agent type "Explore" not found. Available agent types: general-purpose, reader</tool_use_error>`}, isError: true,
		},
		{
			name:  "no prompt",
			input: `{"description":"x","subagent_type":"reader"}`,
			want:  []string{`<tool_use_error>InputValidationError: Task: the required parameter "prompt" is missing</tool_use_error>`}, isError: true,
		},
		{
			name:  "blank prompt",
			input: `{"description":"x","prompt":"  ","subagent_type":"reader"}`,
			want:  []string{`<tool_use_error>"prompt" is empty; give the agent its task</tool_use_error>`}, isError: true,
		},
		{
			name:  "unknown parameter",
			input: `{"description":"x","prompt":"y","model":"opus"}`,
			want:  []string{`<tool_use_error>InputValidationError: Task: unknown parameter "model"; Task takes description, prompt, subagent_type</tool_use_error>`}, isError: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSubagents{rep: tc.rep}
			r := call(t, NewTask(testAgents()).With(f), env, tc.input)
			var got []string
			for _, b := range r.Content {
				got = append(got, b.Text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || r.IsError != tc.isError {
				t.Errorf("result (-want +got):\n%s\nisError %v", diff, r.IsError)
			}
			switch {
			case tc.called == "" && len(f.calls) != 0:
				t.Errorf("a subagent ran: %+v", f.calls)
			case tc.called != "" && (len(f.calls) != 1 || f.calls[0].Agent.Name != tc.called || f.calls[0].Prompt != "find the parser" || f.calls[0].Description != "Find it"):
				t.Errorf("the runner got %+v, want a %s agent on the prompt", f.calls, tc.called)
			}
		})
	}
}

func TestTaskDetail(t *testing.T) {
	f := &fakeSubagents{rep: SubagentReport{AgentID: "1234abcd", Text: "done", Tokens: 7, ToolUses: 2, Duration: time.Second, Usage: model.Usage{InputTokens: 5, OutputTokens: 2}}}
	r := call(t, NewTask(testAgents()).With(f), newEnv(t), `{"description":"d","prompt":"p","subagent_type":"general-purpose"}`)
	got, err := jsonw.Marshal(r.Detail)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"completed","prompt":"p","agentId":"1234abcd","content":[{"type":"text","text":"done"}],"totalDurationMs":1000,"totalTokens":7,"totalToolUseCount":2,"usage":{"input_tokens":5,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("toolUseResult (-want +got):\n%s", diff)
	}
}

func TestTaskErrors(t *testing.T) {
	in := rawInput(t, `{"description":"d","prompt":"p","subagent_type":"general-purpose"}`)
	if _, err := NewTask(testAgents()).Run(context.Background(), newEnv(t), in); !errors.Is(err, errNoSubagents) {
		t.Errorf("a Task no session wired ran: %v", err)
	}
	boom := errors.New("the model is down")
	if _, err := NewTask(testAgents()).With(&fakeSubagents{err: boom}).Run(context.Background(), newEnv(t), in); !errors.Is(err, boom) {
		t.Errorf("the subagent's failure was not returned: %v", err)
	}
}
