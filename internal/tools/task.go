package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Subagents runs the child agents of Task calls for a session (SPEC E4).
// Run is called concurrently when one response makes several Task calls,
// so each child keeps its own conversation, transcript and read state.
type Subagents interface {
	// Run runs one child agent until it ends its turn and reports what
	// it did. env is the calling agent's environment. Cancelling ctx
	// stops the child promptly, leaves its transcript valid, and Run then
	// returns an error.
	Run(ctx context.Context, env *tool.Env, call SubagentCall) (SubagentReport, error)
}

// SubagentCall is the work one Task call hands over.
type SubagentCall struct {
	Agent       subagent.Definition
	Description string
	Prompt      string
}

// SubagentReport is what a child agent did.
type SubagentReport struct {
	// AgentID names the child and its transcript.
	AgentID string
	// Text is the child's final message: its report.
	Text string
	// MaxTurns is set when the child was stopped at the turn limit
	// before it finished.
	MaxTurns bool
	// Usage is the child's last response's usage; Tokens adds it up (the
	// child's context at the end, and its last output).
	Usage    model.Usage
	Tokens   int64
	ToolUses int
	Duration time.Duration
}

// Task runs a subagent: a fresh agent that works on a task with the
// calling agent's tools (but Task) and answers with one final report.
// Its description lists the kinds of agent the session offers, fixed
// when the tool is made, so the tool's bytes stay the same for the
// prompt cache. NewTask makes one; it refuses to run until a session
// gives it its Subagents (With).
//
// ReadOnly is false: what the child does depends on its own calls,
// which the session's permission gate decides one by one, as it does
// the parent's; for the same reason it is not Destructive. Several Task
// calls of a response run concurrently.
type Task struct {
	agents []subagent.Definition
	run    Subagents
	spec   model.ToolSpec
}

// NewTask returns a Task offering agents (subagent.Load's), which must
// include subagent.GeneralPurpose.
func NewTask(agents []subagent.Definition) *Task {
	t := &Task{agents: agents}
	var b strings.Builder
	b.WriteString(taskIntro)
	for _, a := range agents {
		tools := "all tools"
		if len(a.DisallowedTools) > 0 {
			tools = "all tools but " + strings.Join(a.DisallowedTools, ", ")
		}
		if a.Tools != nil {
			allowed := slices.DeleteFunc(slices.Clone(a.Tools), func(n string) bool { return !a.Allows(n) })
			tools = "tools: " + strings.Join(allowed, ", ")
			if len(allowed) == 0 {
				tools = "no tools"
			}
		}
		fmt.Fprintf(&b, "- %s: %s (%s)\n", a.Name, oneLineText(a.Description), tools)
	}
	b.WriteString(taskUsage)
	t.spec = model.ToolSpec{Name: "Task", Description: b.String(), InputSchema: taskSchema}
	return t
}

// With returns the tool running its agents through s.
func (t *Task) With(s Subagents) *Task {
	c := *t
	c.run = s
	return &c
}

// Agents returns the kinds of agent the tool offers.
func (t *Task) Agents() []subagent.Definition { return t.agents }

const taskIntro = `Starts a subagent: a fresh agent that works on one task on its own, with its own context window, and answers with a single final report. Use it for work that would fill your context with searching and reading — open-ended searches across the codebase, research that takes several rounds — or to work on independent parts of a task in parallel.

The kinds of agent (subagent_type) and their tools:
`

const taskUsage = `
How to use it:
- The subagent sees nothing of this conversation: write a complete, self-contained prompt saying exactly what to do, what you already know, and what to put in its report.
- Say whether it should change files or only research.
- Its report comes back to you, not to the user: tell the user what matters from it.
- To run several subagents at once, make several Task calls in one message.
- For a lookup you can do in a call or two (a known file, one pattern), use Read, Grep or Glob directly instead.
`

var taskSchema = schema(`{
	"type": "object",
	"properties": {
		"description": {"type": "string", "description": "A short (3-5 word) label for the task"},
		"prompt": {"type": "string", "description": "The task for the agent: complete and self-contained"},
		"subagent_type": {"type": "string", "description": "The kind of agent to run, one of those listed"}
	},
	"required": ["description", "prompt", "subagent_type"],
	"additionalProperties": false
}`)

// Spec describes Task to the model.
func (t *Task) Spec() model.ToolSpec { return t.spec }

// ReadOnly reports false: see the type's comment.
func (*Task) ReadOnly(json.RawMessage) bool { return false }

// Destructive reports false: see the type's comment.
func (*Task) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports true: each child has its own state.
func (*Task) ConcurrencySafe(json.RawMessage) bool { return true }

// taskDetail is Task's toolUseResult, with Claude Code's field names.
type taskDetail struct {
	Status            string        `json:"status"`
	Prompt            string        `json:"prompt"`
	AgentID           string        `json:"agentId"`
	Content           []model.Block `json:"content"`
	TotalDurationMs   int64         `json:"totalDurationMs"`
	TotalTokens       int64         `json:"totalTokens"`
	TotalToolUseCount int           `json:"totalToolUseCount"`
	Usage             model.Usage   `json:"usage"`
}

// errNoSubagents is returned by a Task no session gave its Subagents.
var errNoSubagents = errors.New("Task cannot run subagents: the session must give it its Subagents (Task.With)")

// Run runs the subagent and returns its report.
func (t *Task) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("Task", input, "description", "prompt", "subagent_type")
	desc := a.str("description", true)
	prompt := a.str("prompt", true)
	kind := a.str("subagent_type", false)
	if a.err != nil {
		return a.invalid(), nil
	}
	if strings.TrimSpace(prompt) == "" {
		return failf(`"prompt" is empty; give the agent its task`), nil
	}
	if kind == "" {
		kind = subagent.GeneralPurpose
	}
	def, ok := t.agent(kind)
	if !ok {
		return failf("Agent type %q not found. Available agent types: %s", kind, strings.Join(t.names(), ", ")), nil
	}
	if t.run == nil {
		return tool.Result{}, errNoSubagents
	}
	rep, err := t.run.Run(ctx, env, SubagentCall{Agent: def, Description: desc, Prompt: prompt})
	if err != nil {
		return tool.Result{}, err
	}
	text := rep.Text
	if strings.TrimSpace(text) == "" {
		text = "The agent ended without a final report."
	}
	if rep.MaxTurns {
		text = "The agent was stopped at the turn limit before it finished. Its last message:\n\n" + text
	}
	content := []model.Block{model.TextBlock(text)}
	r := tool.Result{Content: append(content, model.TextBlock(fmt.Sprintf(
		"agentId: %s\n<usage>total_tokens: %d\ntool_uses: %d\nduration_ms: %d</usage>",
		rep.AgentID, rep.Tokens, rep.ToolUses, rep.Duration.Milliseconds())))}
	status := "completed"
	if rep.MaxTurns {
		status = "max_turns"
	}
	r.Detail = taskDetail{
		Status: status, Prompt: prompt, AgentID: rep.AgentID, Content: content,
		TotalDurationMs: rep.Duration.Milliseconds(), TotalTokens: rep.Tokens, TotalToolUseCount: rep.ToolUses, Usage: rep.Usage,
	}
	return r, nil
}

func (t *Task) agent(name string) (subagent.Definition, bool) {
	for _, a := range t.agents {
		if a.Name == name {
			return a, true
		}
	}
	return subagent.Definition{}, false
}

func (t *Task) names() []string {
	out := make([]string, len(t.agents))
	for i, a := range t.agents {
		out[i] = a.Name
	}
	return out
}

// oneLineText joins a text's lines, for a list item.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
