// Package governance is what decides over a session besides the model:
// the permission checker and the hooks of the settings files (SPEC H),
// wired into the session's hook points as middlewares. A Governance is a
// gate around tool calls (middleware.Gate: the PreToolUse hooks, then the
// permission check; AfterTool: the PostToolUse hooks) and a stop handler
// (middleware.StopHandler: the Stop hooks), and it runs the other hook
// events — UserPromptSubmit, SessionStart and SessionEnd, PreCompact and
// PostCompact, SubagentStart and SubagentStop, Notification — at the
// points the agent and the command line call it from. PermissionGate is
// the gate of a session without hooks.
package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Options say what a Governance governs with.
type Options struct {
	// Hooks are the hooks configured (hook.Load); nil runs none.
	Hooks *hook.Config
	// ProjectDir is the folder the hooks run in; Cwd is the session's
	// working folder, as hook inputs give it.
	ProjectDir, Cwd string
	// Checker decides whether calls may run. Required.
	Checker *permission.Checker
	// Refused collects the calls refused, for a headless result's
	// permission_denials; nil keeps none.
	Refused *Denials
	// Messages hears what the hooks have to say to the person, a line
	// each; nil discards it.
	Messages io.Writer
	// Halt ends the run when a hook answers "continue": false, with a
	// HookStopped cause; nil leaves the run going.
	Halt func(cause error)
}

// Session is the session the hooks are told about.
type Session interface {
	ID() string
	// Path is the session's transcript file ("" when it is kept
	// elsewhere).
	Path() string
}

// Governance composes the hooks with the permission checker. Its methods
// are safe for concurrent use: the engine runs some tool calls in
// parallel, and the terminal UI asks questions from other goroutines.
type Governance struct {
	o     Options
	hooks *hook.Runner

	// calls holds, by tool_use id, what Check decided that AfterTool
	// needs: the input the call ran with and the PreToolUse context.
	calls sync.Map
	mu    sync.Mutex
	// session is the session the hooks are told about (Attach).
	session Session
	// started is the SessionStart context, attached to the first prompt.
	started *engine.Attachment
}

// New returns the governance o describes.
func New(o Options) *Governance {
	if o.Messages == nil {
		o.Messages = io.Discard
	}
	if o.Halt == nil {
		o.Halt = func(error) {}
	}
	g := &Governance{o: o}
	g.hooks = hook.NewRunner(o.Hooks, hook.Options{ProjectDir: o.ProjectDir, Session: g.hookSession})
	return g
}

// Attach makes s the session the hooks are told about (its id and
// transcript), from the next hook on: the session opened, or the one
// /clear or /resume opened in its place.
func (g *Governance) Attach(s Session) {
	g.mu.Lock()
	g.session = s
	g.mu.Unlock()
}

// allowedCall is what Check passes on to AfterTool about a call.
type allowedCall struct {
	input    json.RawMessage
	reminder string
}

// HookStopped ends a run whose hook answered "continue": false.
type HookStopped struct{ Name, Reason string }

func (h HookStopped) Error() string {
	if h.Reason == "" {
		return fmt.Sprintf("the %s hook stopped the run", h.Name)
	}
	return fmt.Sprintf("the %s hook stopped the run: %s", h.Name, h.Reason)
}

// hookSession is what every hook input says about the session.
func (g *Governance) hookSession() hook.Session {
	s := hook.Session{Cwd: g.o.Cwd, PermissionMode: string(g.o.Checker.Mode())}
	g.mu.Lock()
	cur := g.session
	g.mu.Unlock()
	if cur != nil {
		s.ID, s.TranscriptPath = cur.ID(), cur.Path()
	}
	return s
}

// PreCompact runs the PreCompact hooks (compact.Config.PreCompact): a
// block cancels the compaction, instructions they print are added to the
// summary's.
func (g *Governance) PreCompact(ctx context.Context, trigger, instructions string) (string, error) {
	out := g.hooks.PreCompact(ctx, hook.Trigger(trigger), instructions)
	g.report(out.Outcome)
	if out.Blocked {
		return "", fmt.Errorf("a PreCompact hook blocked the compaction: %s", out.Reason)
	}
	return out.Instructions, nil
}

// PostCompact runs the PostCompact hooks with the summary
// (compact.Config.PostCompact); the context they add travels with the
// compacted history.
func (g *Governance) PostCompact(ctx context.Context, trigger, summary string) []engine.Attachment {
	out := g.hooks.PostCompact(ctx, hook.Trigger(trigger), summary)
	g.report(out.Outcome)
	if a, ok := out.Outcome.Attachment(); ok {
		return []engine.Attachment{a}
	}
	return nil
}

// report tells the person what the hooks had to say. (Why a hook stopped
// the run is the run's error, told once at its end.)
func (g *Governance) report(o hook.Outcome) {
	for _, m := range o.Messages {
		fmt.Fprintln(g.o.Messages, "cairn:", m)
	}
}

// stopIfAsked ends the run when a hook answered "continue": false.
func (g *Governance) stopIfAsked(o hook.Outcome) {
	if o.Stop {
		g.o.Halt(HookStopped{o.Name, o.StopReason})
	}
}

// SessionStart runs the SessionStart hooks and keeps their context for
// the first prompt; a hook that stops the run is the error.
func (g *Governance) SessionStart(ctx context.Context, source hook.Source, modelName string) error {
	out := g.hooks.SessionStart(ctx, source, modelName)
	g.report(out.Outcome)
	if out.Stop {
		return HookStopped{out.Name, out.StopReason}
	}
	if a, ok := out.Attachment(); ok {
		g.mu.Lock()
		g.started = &a
		g.mu.Unlock()
	}
	return nil
}

// SessionEnd runs the SessionEnd hooks as the session ends; the run's
// own cancellation does not stop them.
func (g *Governance) SessionEnd(ctx context.Context, reason hook.EndReason) {
	g.report(g.hooks.SessionEnd(context.WithoutCancel(ctx), reason))
}

// Notify runs the Notification hooks of kind with message (a question
// put to the person); it returns once they ran, whatever ctx does.
func (g *Governance) Notify(ctx context.Context, kind, message string) {
	g.report(g.hooks.Notification(context.WithoutCancel(ctx), kind, message))
}

// Check implements middleware.Gate: it runs the PreToolUse hooks, then
// the permission check. A hook's deny refuses the call; its ask takes the
// checker's ask path (in a headless run, a refusal); its allow waives the
// question the mode would ask but not a deny or ask rule, as in Claude
// Code; its updatedInput is the input the check and the call see.
func (g *Governance) Check(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	out := g.hooks.PreToolUse(ctx, hook.ToolCall{Name: call.Name, ID: call.ID, Input: call.Input})
	g.report(out.Outcome)
	input := call.Input
	if out.UpdatedInput != nil {
		input = out.UpdatedInput
	}
	var v engine.Verdict
	if out.Stop { // the run ends; the call does not run
		v = g.byHook(false, HookStopped{out.Name, out.StopReason}.Error())
	} else {
		v = g.decide(ctx, t, call.Name, input, out)
	}
	if !v.Allow {
		g.o.Refused.add(call)
	} else {
		if out.UpdatedInput != nil {
			v.Input = input
		}
		g.calls.Store(call.ID, allowedCall{input: input, reminder: out.Reminder()})
	}
	g.stopIfAsked(out.Outcome)
	return v
}

// decide is the permission decision for a call, given what the
// PreToolUse hooks answered.
func (g *Governance) decide(ctx context.Context, t tool.Tool, name string, input json.RawMessage, out hook.PreToolUseOutcome) engine.Verdict {
	c := g.o.Checker
	mode := c.Mode()
	switch out.Decision {
	case hook.Deny:
		return g.byHook(false, fmt.Sprintf("The %s hook refused this call: %s", out.Name, out.Reason))
	case hook.Allow, hook.Ask:
		// What the rules say, were someone there to answer.
		req := c.Request(t, input)
		req.Headless = false
		d := permission.Decide(ctx, req)
		switch {
		case d.Behavior == permission.Deny:
			return engine.Verdict{Reason: d.Reason, Record: d.Record(mode)}
		case out.Decision == hook.Allow && (d.Behavior == permission.Allow || d.Rule == ""):
			return g.byHook(true, "Allowed by the "+out.Name+" hook"+sentence(out.Reason))
		case out.Decision == hook.Allow: // an ask rule still asks
			return verdictOf(c.Check(ctx, t, input), mode)
		}
		reason := fmt.Sprintf("Permission to use %s was not granted: the %s hook asks for confirmation%s, and headless mode cannot ask. Change the hook, or run this step interactively.", name, out.Name, parenthesis(out.Reason))
		return engine.Verdict{Reason: reason, Record: permission.Record{Decision: permission.Deny, By: "headless", Reason: reason, Mode: mode}}
	}
	return verdictOf(c.Check(ctx, t, input), mode)
}

// byHook is a verdict a hook decided, recorded as the hook's.
func (g *Governance) byHook(allow bool, reason string) engine.Verdict {
	rec := permission.Record{Decision: permission.Deny, By: "hook", Reason: reason, Mode: g.o.Checker.Mode()}
	if allow {
		rec.Decision = permission.Allow
	}
	return engine.Verdict{Allow: allow, Reason: reason, Record: rec}
}

func verdictOf(d permission.Decision, mode permission.Mode) engine.Verdict {
	return engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(mode)}
}

// AfterTool runs the PostToolUse hooks on a call that succeeded
// (engine.Config.AfterTool): their feedback and context, and the context
// the PreToolUse hooks gave the call, are added to the result the model
// reads.
func (g *Governance) AfterTool(ctx context.Context, t tool.Tool, call model.Block, res tool.Result) tool.Result {
	ac := allowedCall{input: call.Input}
	if v, ok := g.calls.LoadAndDelete(call.ID); ok {
		ac = v.(allowedCall)
	}
	if ac.reminder != "" {
		res.Content = append(append([]model.Block(nil), res.Content...), model.TextBlock(ac.reminder))
	}
	if res.IsError {
		return res // PostToolUse is for calls that succeeded
	}
	out := g.hooks.PostToolUse(ctx, hook.ToolCall{Name: call.Name, ID: call.ID, Input: ac.input}, toolResponse(res))
	g.report(out.Outcome)
	g.stopIfAsked(out.Outcome)
	return out.Apply(res)
}

// toolResponse is a result as PostToolUse hooks get it: the tool's own
// record of the call when it keeps one, else its text.
func toolResponse(res tool.Result) any {
	if res.Detail != nil {
		return res.Detail
	}
	var parts []string
	for _, b := range res.Content {
		if b.Type == model.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// BeforePrompt attaches the SessionStart context to the run's first
// prompt and runs the UserPromptSubmit hooks (engine.Config.BeforePrompt):
// a block ends the run before anything is recorded; their context goes
// with the prompt.
func (g *Governance) BeforePrompt(ctx context.Context, in engine.Input) (engine.Input, error) {
	g.mu.Lock()
	started := g.started
	g.started = nil
	g.mu.Unlock()
	if started != nil {
		in.Attachments = append(in.Attachments, *started)
	}
	out := g.hooks.UserPromptSubmit(ctx, in.Message.Text())
	g.report(out.Outcome)
	switch {
	case out.Stop:
		return in, HookStopped{out.Name, out.StopReason}
	case out.Blocked:
		return in, fmt.Errorf("the %s hook blocked the prompt: %s", out.Name, out.Reason)
	}
	if a, ok := out.Attachment(); ok {
		in.Attachments = append(in.Attachments, a)
	}
	return in, nil
}

// BeforeStop implements middleware.StopHandler: it runs the Stop hooks
// when the model ends its turn; a hook that blocks keeps the turn going
// with its reason.
func (g *Governance) BeforeStop(ctx context.Context, res *engine.Result, again bool) string {
	return g.stopVerdict(g.hooks.Stop(ctx, again, res.Text), "the turn end")
}

// stopVerdict reports a Stop or SubagentStop hook's outcome and returns
// the reason to keep working, "" to let what (the turn, the subagent)
// end.
func (g *Governance) stopVerdict(out hook.StopOutcome, what string) string {
	g.report(out.Outcome)
	if out.Stop && out.Event == hook.SubagentStop {
		// It ends the subagent, not the run: the session goes on.
		fmt.Fprintf(g.o.Messages, "cairn: the %s hook ended the subagent%s\n", out.Name, sentence(out.StopReason))
		return ""
	}
	if out.Stop {
		fmt.Fprintln(g.o.Messages, "cairn:", HookStopped{out.Name, out.StopReason})
		return ""
	}
	if !out.Blocked {
		return ""
	}
	return "The " + out.Name + " hook did not let " + what + " yet: " + out.Reason
}

// SubagentStart runs the SubagentStart hooks of a subagent's type; the
// context they give goes with its task.
func (g *Governance) SubagentStart(ctx context.Context, a hook.Subagent) []engine.Attachment {
	out := g.hooks.SubagentStart(ctx, a)
	g.report(out.Outcome)
	if att, ok := out.Attachment(); ok {
		return []engine.Attachment{att}
	}
	return nil
}

// SubagentStop runs the SubagentStop hooks when a subagent ends its turn:
// what BeforeStop is to the session, for the subagent. A hook that
// blocks keeps it at work, with its reason.
func (g *Governance) SubagentStop(ctx context.Context, a hook.Subagent, res *engine.Result, again bool) string {
	return g.stopVerdict(g.hooks.SubagentStop(ctx, a, again, res.Text), "the subagent finish")
}

// sentence turns a reason into the end of a sentence: ": reason." or ".".
func sentence(reason string) string {
	if reason == "" {
		return "."
	}
	return ": " + strings.TrimSuffix(reason, ".") + "."
}

func parenthesis(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// PermissionGate is the gate of a session without hooks: it asks c about
// each call, records the decision on the call's result line, and keeps
// the refused calls in refused (nil keeps none). Safe for concurrent use.
func PermissionGate(c *permission.Checker, refused *Denials) middleware.Gate {
	return middleware.GateFunc(func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		d := c.Check(ctx, t, call.Input)
		v := verdictOf(d, c.Mode())
		if !v.Allow {
			refused.add(call)
		}
		return v
	})
}

// Denials collects refused calls, as a headless result's
// permission_denials lists them. The zero value is ready to use; safe
// for concurrent use; a nil *Denials keeps nothing.
type Denials struct {
	mu    sync.Mutex
	calls []map[string]any
}

func (d *Denials) add(call model.Block) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.calls = append(d.calls, map[string]any{"tool_name": call.Name, "tool_use_id": call.ID, "tool_input": json.RawMessage(call.Input)})
	d.mu.Unlock()
}

// List returns the refused calls, in the order they were refused: tool
// name, call id and input of each.
func (d *Denials) List() []map[string]any {
	if d == nil {
		return []map[string]any{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any{}, d.calls...)
}

var (
	_ middleware.Gate        = (*Governance)(nil)
	_ middleware.StopHandler = (*Governance)(nil)
)
