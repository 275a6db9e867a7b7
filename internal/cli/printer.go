package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
)

// printer writes a headless run in one of Claude Code's output formats:
// text (the final reply), json (the result object) or stream-json (one
// object a line: init, each message, the result).
type printer struct {
	env     Env
	format  string
	verbose bool
	ag      *agent.Agent
	choice  *modelChoice
	start   time.Time
	apiTime time.Duration
	// usage adds up every response of the run, its subagents' included;
	// the cost is the model choice's, which counts side requests too.
	usage   model.Usage
	denials *denials
	// budget, when positive, is --max-budget-usd; structured is the
	// --json-schema tool, nil without one.
	budget     float64
	structured *tools.StructuredOutput
	// status is the status stream-json last said (statusWord), nil for
	// none.
	status any
}

func newPrinter(env Env, format string, verbose bool, ag *agent.Agent, choice *modelChoice, d *denials) *printer {
	return &printer{env: env, format: format, verbose: verbose, ag: ag, choice: choice, start: env.Now(), denials: d}
}

func (p *printer) line(v any) {
	b, err := jsonw.Marshal(v)
	if err != nil {
		fmt.Fprintln(p.env.Stderr, "cairn: encode output:", err)
		return
	}
	p.env.Stdout.Write(append(b, '\n'))
}

func (p *printer) init(checker *permission.Checker) {
	if p.format != "stream-json" {
		return
	}
	names := p.agentTools()
	p.line(map[string]any{
		"type": "system", "subtype": "init", "cwd": p.env.Cwd, "session_id": p.ag.ID(),
		"tools": names, "mcp_servers": []any{}, "model": p.choice.Name,
		"permissionMode": string(checker.Mode()), "slash_commands": append([]string{"compact", "context", "summary"}, extensionNames(p.ag)...),
		"apiKeySource": p.keySource(), "output_style": "default", "uuid": uuid.NewString(),
	})
}

func (p *printer) agentTools() []string {
	var out []string
	for _, s := range p.ag.ToolSpecs() {
		out = append(out, s.Name)
	}
	return out
}

func (p *printer) keySource() string {
	switch {
	case p.choice.Provider == "anthropic" && p.env.Getenv("ANTHROPIC_API_KEY") != "":
		return "ANTHROPIC_API_KEY"
	case p.choice.Provider == "openai" && p.env.Getenv("OPENAI_API_KEY") != "":
		return "OPENAI_API_KEY"
	}
	return "none"
}

// run runs one turn and prints it. It returns errReported when the turn
// failed (the failure was printed).
func (p *printer) run(ctx context.Context, prompt string) error {
	if p.structured != nil {
		p.structured.Reset()
	}
	done, failure := p.turn(ctx, prompt)
	if p.structured != nil && failure == nil {
		done, failure = p.insist(ctx, done)
	}
	return p.finish(done, failure)
}

// turn runs one turn, printing its messages, and returns how it ended.
func (p *printer) turn(ctx context.Context, prompt string) (*engine.Result, error) {
	if p.overBudget() {
		return nil, errBudget
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	p.status = nil // a turn cut short may not have said it was done
	var sent time.Time
	var done *engine.Result
	var failure error
	for ev, err := range p.ag.Run(ctx, prompt) {
		if err != nil {
			failure = err
			break
		}
		switch ev.Type {
		case engine.EventRequest:
			sent = p.env.Now()
		case engine.EventAssistant:
			p.apiTime += p.env.Now().Sub(sent)
			p.spent(ev.Response.Usage)
			if p.overBudget() {
				stop(errBudget) // the response is printed; nothing more is asked
			}
			if p.format == "stream-json" {
				p.line(map[string]any{"type": "assistant", "message": assistantJSON(ev.Response), "parent_tool_use_id": nil, "session_id": p.ag.ID(), "uuid": uuid.NewString()})
			}
		case engine.EventUser:
			if p.format == "stream-json" && isToolResults(ev.Message) {
				p.line(map[string]any{"type": "user", "message": ev.Message, "parent_tool_use_id": nil, "session_id": p.ag.ID(), "uuid": uuid.NewString()})
			}
		case engine.EventToolResult:
			if p.verbose {
				fmt.Fprintf(p.env.Stderr, "[%s] %s\n", ev.Call.Name, firstLine(ev.Result.Content))
			}
		case engine.EventToolProgress:
			if p.verbose {
				fmt.Fprintf(p.env.Stderr, "[%s …] %s\n", ev.Call.Name, ev.Text)
			}
		case engine.EventToolMessage:
			p.subagentMessage(ev)
		case engine.EventNotice:
			fmt.Fprintln(p.env.Stderr, "cairn:", ev.Text)
		case engine.EventCompact:
			p.compacted(ev.Compaction)
		case engine.EventStatus:
			// One event a change of Claude Code's word: how far the work
			// has got changes the text, not the event.
			if w := statusWord(ev.Text); p.format == "stream-json" && w != p.status {
				p.status = w
				p.line(map[string]any{"type": "system", "subtype": "status", "status": w, "session_id": p.ag.ID(), "uuid": uuid.NewString()})
			}
		case engine.EventDone:
			done = ev.Done
		}
	}
	if errors.Is(context.Cause(ctx), errBudget) {
		failure = errBudget
	}
	return done, failure
}

func (p *printer) finish(done *engine.Result, failure error) error {
	res := map[string]any{
		"type": "result", "session_id": p.ag.ID(),
		"duration_ms": p.env.Now().Sub(p.start).Milliseconds(), "duration_api_ms": p.apiTime.Milliseconds(),
		"total_cost_usd": p.choice.cost(), "permission_denials": p.denials.List(), "uuid": uuid.NewString(),
	}
	var exit error
	switch {
	case errors.Is(failure, errBudget):
		res["subtype"], res["is_error"], res["num_turns"], res["result"] = "error_max_budget_usd", true, 0, failure.Error()
		res["usage"] = p.usage
		exit = failure
	case failure != nil:
		res["subtype"], res["is_error"], res["num_turns"], res["result"] = "error_during_execution", true, 0, failure.Error()
		res["usage"] = p.usage
		exit = failure
	default:
		res["num_turns"], res["usage"], res["result"] = done.Turns, p.usage, done.Text
		res["subtype"], res["is_error"] = "success", false
		if done.Stop == engine.StopMaxTurns {
			res["subtype"], res["is_error"] = "error_max_turns", true
			exit = fmt.Errorf("stopped after %d turns (--max-turns); continue with `cairn -c -p …`: %w", done.Turns, errReported)
		}
	}
	if failure == nil && p.structured != nil {
		if v, ok := p.structured.Value(); ok {
			res["structured_output"] = v
		} else {
			n, why := p.structured.Attempts()
			res["subtype"], res["is_error"] = "error_max_structured_output_retries", true
			res["errors"] = []string{structuredFailure(n, why)}
			exit = fmt.Errorf("%s: %w", structuredFailure(n, why), errReported)
			if p.format == "text" {
				fmt.Fprintln(p.env.Stderr, "cairn:", structuredFailure(n, why))
				return exit
			}
		}
	}
	switch p.format {
	case "text":
		if failure == nil {
			fmt.Fprintln(p.env.Stdout, done.Text)
		}
	default:
		p.line(res)
		if failure != nil {
			exit = fmt.Errorf("%v: %w", failure, errReported)
		}
	}
	return exit
}

// spent adds a response's usage to the run's.
func (p *printer) spent(u model.Usage) { p.usage = p.usage.Plus(u) }

// subagentMessage takes in a message a subagent reported through its
// Task call: a reply's usage counts toward the run's, and stream-json
// prints the message tagged with the call's id, as Claude Code does.
func (p *printer) subagentMessage(ev engine.Event) {
	if ev.Response != nil {
		p.spent(ev.Response.Usage)
	}
	if p.format != "stream-json" {
		return
	}
	if ev.Response != nil {
		p.line(map[string]any{"type": "assistant", "message": assistantJSON(ev.Response), "parent_tool_use_id": ev.Call.ID, "session_id": p.ag.ID(), "uuid": uuid.NewString()})
		return
	}
	p.line(map[string]any{"type": "user", "message": ev.Message, "parent_tool_use_id": ev.Call.ID, "session_id": p.ag.ID(), "uuid": uuid.NewString()})
}

// compacted reports a compaction: a compact_boundary event in stream-json,
// a line on stderr otherwise, so a compaction is never silent.
func (p *printer) compacted(c *engine.Compaction) {
	if p.format == "stream-json" {
		p.line(map[string]any{"type": "system", "subtype": "compact_boundary", "session_id": p.ag.ID(), "uuid": c.BoundaryUUID,
			"compact_metadata": map[string]any{"trigger": c.Trigger, "pre_tokens": c.PreTokens, "post_tokens": c.PostTokens, "duration_ms": c.Duration.Milliseconds()}})
		return
	}
	fmt.Fprintf(p.env.Stderr, "cairn: context compacted (%s): %s → %s tokens in %.1f s; %s\n",
		c.Trigger, tokens.Thousands(c.PreTokens), tokens.Thousands(c.PostTokens), c.Duration.Seconds(), c.Summary)
}

// finishText ends a run of a slash command with text as its result; the
// cost is what its requests cost (a /compact's summary).
func (p *printer) finishText(text string) error {
	if p.format == "text" {
		fmt.Fprint(p.env.Stdout, text)
		return nil
	}
	p.line(map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "session_id": p.ag.ID(),
		"duration_ms": p.env.Now().Sub(p.start).Milliseconds(), "duration_api_ms": 0, "num_turns": 0,
		"result": text, "total_cost_usd": p.choice.cost(), "usage": model.Usage{}, "permission_denials": []any{}, "uuid": uuid.NewString(),
	})
	return nil
}

// assistantJSON is a response as Claude Code prints it in stream-json.
func assistantJSON(r *model.Response) map[string]any {
	return map[string]any{
		"id": r.ID, "type": "message", "role": model.RoleAssistant, "model": r.Model,
		"content": r.Content, "stop_reason": r.StopReason, "stop_sequence": nil, "usage": r.Usage,
	}
}

func isToolResults(m *model.Message) bool {
	return m != nil && len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult
}

func firstLine(blocks []model.Block) string {
	for _, b := range blocks {
		if b.Type == model.BlockText {
			s := b.Text
			for i, c := range s {
				if c == '\n' {
					return s[:i]
				}
			}
			return s
		}
	}
	return ""
}

// statusWord is the status of a stream-json status event for an
// EventStatus's text: Claude Code's word ("compacting"), without how far
// the work has got (": part 2"), and null when the work is done.
func statusWord(text string) any {
	if word, _, _ := strings.Cut(text, ":"); word != "" {
		return word
	}
	return nil
}
