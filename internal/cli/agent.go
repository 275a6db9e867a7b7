package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/hook"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// agentFlags are the flags of `cairn` and `cairn -p`, Claude Code's names.
type agentFlags struct {
	print          bool
	outputFormat   string
	verbose        bool
	cont           bool
	resume         string
	pick           bool // -r without an id: pick the session from a list
	fork           bool
	sessionID      string
	model          string
	provider       string
	maxTurns       int
	appendSystem   string
	permissionMode string
	// skipPermissions is --dangerously-skip-permissions.
	skipPermissions bool
	allowed         []string
	disallowed      []string
	addDirs         []string
	// ext are the headless hosts' flags (headless.go).
	ext extFlags
}

func addAgentFlags(root *cobra.Command, env Env) {
	f := &agentFlags{}
	fl := root.Flags()
	fl.BoolVarP(&f.print, "print", "p", false, "run headless: answer the prompt (argument or stdin) and exit")
	fl.StringVar(&f.outputFormat, "output-format", "text", "text, json or stream-json")
	fl.BoolVar(&f.verbose, "verbose", false, "say more on stderr")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the newest session of this project")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume a session by `ID` (or its first characters) or transcript path; alone, pick it from a list")
	fl.BoolVar(&f.fork, "fork-session", false, "with --continue or --resume: continue in a new session, leaving the old one as it was")
	fl.StringVar(&f.sessionID, "session-id", "", "the id (a UUID) of the new session")
	fl.StringVar(&f.model, "model", "", "the model to use")
	fl.StringVar(&f.provider, "provider", "", "anthropic or openai (default: whichever API's variables are set)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "stop after this many model requests (0: no limit)")
	fl.StringVar(&f.appendSystem, "append-system-prompt", "", "text added to the end of the system prompt")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "default, acceptEdits, plan, bypassPermissions or dontAsk (never ask: deny what would ask)")
	fl.BoolVar(&f.skipPermissions, "dangerously-skip-permissions", false, "the same as --permission-mode bypassPermissions: allow every call no deny rule denies")
	fl.StringArrayVar(&f.allowed, "allowedTools", nil, "permission `rules` to allow, comma- or space-separated, e.g. \"Bash(npm test:*) Edit\" (also --allowed-tools)")
	fl.StringArrayVar(&f.disallowed, "disallowedTools", nil, "permission `rules` to deny, as --allowedTools (also --disallowed-tools)")
	fl.StringArrayVar(&f.addDirs, "add-dir", nil, "another directory the session may work in, as the project (repeatable)")
	addExtensionFlags(fl, &f.ext)
	root.Args = args(cobra.ArbitraryArgs)
	root.RunE = func(cmd *cobra.Command, a []string) error {
		f.pick = cmd.Flags().Changed("resume") && f.resume == ""
		return runAgent(cmd.Context(), env, f, a)
	}
}

func runAgent(ctx context.Context, env Env, f *agentFlags, a []string) error {
	switch f.outputFormat {
	case "text", "json", "stream-json":
	default:
		return usagef("--output-format must be text, json or stream-json, not %q", f.outputFormat)
	}
	if f.sessionID != "" {
		if _, err := uuid.Parse(f.sessionID); err != nil {
			return usagef("--session-id %q is not a UUID", f.sessionID)
		}
	}
	if f.skipPermissions {
		if f.permissionMode != "" && f.permissionMode != string(permission.ModeBypass) {
			return usagef("--dangerously-skip-permissions is --permission-mode bypassPermissions; it cannot go with --permission-mode %s", f.permissionMode)
		}
		f.permissionMode = string(permission.ModeBypass)
	}
	if f.permissionMode != "" {
		if _, err := permission.ParseMode(f.permissionMode); err != nil {
			return usageError{err}
		}
	}
	if f.fork && !f.cont && f.resume == "" && !f.pick {
		return usagef("--fork-session needs --continue or --resume: it copies an existing session")
	}
	if f.resume != "" {
		// A mistyped id stops here, before the UI opens or a prompt is
		// read: it is never taken for the prompt or a new session.
		home, err := env.Home()
		if err != nil {
			return err
		}
		if f.resume, err = findSession(ctx, env, home, f.resume, env.Stderr); err != nil {
			return err
		}
	}
	if err := f.ext.check(f); err != nil {
		return err
	}
	prompt := strings.Join(a, " ")
	if !f.print && interactive(env) {
		return runInteractive(ctx, env, f, prompt)
	}
	if !f.print {
		fmt.Fprintln(env.Stderr, "cairn: stdout is not a terminal, so the interactive UI cannot run; running headless as with -p")
	}
	if f.pick {
		return usagef("--resume without a session id opens the session picker, which needs a terminal; give the id (cairn sessions list shows them)")
	}
	if !f.ext.streamInput() {
		var err error
		if prompt, err = headlessPrompt(env, prompt); err != nil {
			return err
		}
	}
	if prompt == "" && !f.ext.streamInput() {
		return usagef("no prompt: give it as an argument (cairn -p \"fix the failing test\") or on stdin")
	}

	s, err := assemble(ctx, env, f, true, env.Stderr)
	if err != nil {
		return err
	}
	defer s.stop()
	ctx = s.ctx
	for _, w := range s.warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	// A headless run ends with its turn: a notes update still running then
	// is given a moment, not the interactive 15 s, before it is dropped
	// (the next run updates the notes again).
	s.opts.SessionMemory.Wait = 3 * time.Second
	ag, err := agent.Open(ctx, s.opts)
	if err != nil {
		return err
	}
	for _, w := range ag.Warnings {
		fmt.Fprintln(env.Stderr, "warning:", w)
	}
	s.awaitMCP(ctx, f, prompt, ag, env.Stderr)
	runErr := s.sessionStart(ctx, f, ag)
	if runErr == nil {
		out := newPrinter(env, f.outputFormat, f.verbose, ag, s.choice, s.refused)
		out.budget, out.structured = f.ext.maxBudgetUSD, s.structured
		out.init(s.checker)
		turn := func(ctx context.Context, prompt string) error {
			if name, rest, ok := slashCommand(prompt); ok && !isExtension(ag, name) {
				return runSlash(ctx, env, out, ag, name, rest)
			}
			return out.run(ctx, prompt)
		}
		if f.ext.streamInput() {
			runErr = runStream(ctx, env, out, ag, turn)
			if prompt != "" {
				fmt.Fprintln(env.Stderr, "warning: with --input-format stream-json the prompts come from stdin; the prompt argument is ignored")
			}
		} else {
			runErr = turn(ctx, prompt)
		}
	}
	var stopped hookStopped
	if errors.As(context.Cause(ctx), &stopped) {
		runErr = stopped
	}
	s.gov.sessionEnd(ctx, hook.EndOther)
	if err := ag.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("finish writing the transcript %s: %w", ag.Path(), err)
	}
	return runErr
}

// gateWith asks the permission checker about each call, records the
// decision on the call's result line, and keeps the refused calls for the
// result's permission_denials.
func gateWith(c *permission.Checker, refused *denials) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	return func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		d := c.Check(ctx, t, call.Input)
		v := engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(c.Mode())}
		if !v.Allow {
			refused.add(call)
		}
		return v
	}
}

// governance composes the hooks with the permission checker into the
// engine's hook points for a headless run. Its methods are safe for
// concurrent use (the engine runs some tool calls in parallel); agent
// and cwd are set once, before the first event.
type governance struct {
	hooks   *hook.Runner
	checker *permission.Checker
	refused *denials
	stderr  io.Writer
	halt    context.CancelCauseFunc
	agent   *agent.Agent
	cwd     string

	// calls holds, by tool_use id, what the Gate decided that AfterTool
	// needs: the input the call ran with and the PreToolUse context.
	calls sync.Map
	mu    sync.Mutex
	// started is the SessionStart context, attached to the first prompt.
	started *engine.Attachment
}

// allowedCall is what the Gate passes on to AfterTool about a call.
type allowedCall struct {
	input    json.RawMessage
	reminder string
}

// hookStopped ends a run whose hook answered "continue": false.
type hookStopped struct{ name, reason string }

func (h hookStopped) Error() string {
	if h.reason == "" {
		return fmt.Sprintf("the %s hook stopped the run", h.name)
	}
	return fmt.Sprintf("the %s hook stopped the run: %s", h.name, h.reason)
}

// session is what every hook input says about the session.
func (g *governance) session() hook.Session {
	s := hook.Session{Cwd: g.cwd, PermissionMode: string(g.checker.Mode())}
	if g.agent != nil {
		s.ID, s.TranscriptPath = g.agent.ID(), g.agent.Path()
	}
	return s
}

// preCompact runs the PreCompact hooks: a block cancels the compaction,
// instructions they print are added to the summary's.
func (g *governance) preCompact(ctx context.Context, trigger, instructions string) (string, error) {
	out := g.hooks.PreCompact(ctx, hook.Trigger(trigger), instructions)
	g.report(out.Outcome)
	if out.Blocked {
		return "", fmt.Errorf("a PreCompact hook blocked the compaction: %s", out.Reason)
	}
	return out.Instructions, nil
}

// postCompact runs the PostCompact hooks with the summary; the context
// they add travels with the compacted history.
func (g *governance) postCompact(ctx context.Context, trigger, summary string) []engine.Attachment {
	out := g.hooks.PostCompact(ctx, hook.Trigger(trigger), summary)
	g.report(out.Outcome)
	if a, ok := out.Outcome.Attachment(); ok {
		return []engine.Attachment{a}
	}
	return nil
}

// report tells the user what the hooks had to say. (Why a hook stopped
// the run is the run's error, printed once at its end.)
func (g *governance) report(o hook.Outcome) {
	for _, m := range o.Messages {
		fmt.Fprintln(g.stderr, "cairn:", m)
	}
}

// stopIfAsked ends the run when a hook answered "continue": false.
func (g *governance) stopIfAsked(o hook.Outcome) {
	if o.Stop {
		g.halt(hookStopped{o.Name, o.StopReason})
	}
}

// sessionStart runs the SessionStart hooks and keeps their context for
// the first prompt.
func (g *governance) sessionStart(ctx context.Context, source hook.Source, modelName string) error {
	out := g.hooks.SessionStart(ctx, source, modelName)
	g.report(out.Outcome)
	if out.Stop {
		return hookStopped{out.Name, out.StopReason}
	}
	if a, ok := out.Attachment(); ok {
		g.mu.Lock()
		g.started = &a
		g.mu.Unlock()
	}
	return nil
}

// gate runs the PreToolUse hooks, then the permission check: a hook's
// deny refuses the call; its ask takes the checker's ask path (in a
// headless run, a refusal); its allow waives the question the mode
// would ask but not a deny or ask rule, as in Claude Code; its
// updatedInput is the input the check and the call see.
func (g *governance) gate(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	out := g.hooks.PreToolUse(ctx, hook.ToolCall{Name: call.Name, ID: call.ID, Input: call.Input})
	g.report(out.Outcome)
	input := call.Input
	if out.UpdatedInput != nil {
		input = out.UpdatedInput
	}
	var v engine.Verdict
	if out.Stop { // the run ends; the call does not run
		v = g.byHook(false, hookStopped{out.Name, out.StopReason}.Error())
	} else {
		v = g.decide(ctx, t, call.Name, input, out)
	}
	if !v.Allow {
		g.refused.add(call)
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
func (g *governance) decide(ctx context.Context, t tool.Tool, name string, input json.RawMessage, out hook.PreToolUseOutcome) engine.Verdict {
	mode := g.checker.Mode()
	switch out.Decision {
	case hook.Deny:
		return g.byHook(false, fmt.Sprintf("The %s hook refused this call: %s", out.Name, out.Reason))
	case hook.Allow, hook.Ask:
		// What the rules say, were someone there to answer.
		req := g.checker.Request(t, input)
		req.Headless = false
		d := permission.Decide(ctx, req)
		switch {
		case d.Behavior == permission.Deny:
			return engine.Verdict{Reason: d.Reason, Record: d.Record(mode)}
		case out.Decision == hook.Allow && (d.Behavior == permission.Allow || d.Rule == ""):
			return g.byHook(true, "Allowed by the "+out.Name+" hook"+sentence(out.Reason))
		case out.Decision == hook.Allow: // an ask rule still asks
			return verdictOf(g.checker.Check(ctx, t, input), mode)
		}
		reason := fmt.Sprintf("Permission to use %s was not granted: the %s hook asks for confirmation%s, and headless mode cannot ask. Change the hook, or run this step interactively.", name, out.Name, parenthesis(out.Reason))
		return engine.Verdict{Reason: reason, Record: permission.Record{Decision: permission.Deny, By: "headless", Reason: reason, Mode: mode}}
	}
	return verdictOf(g.checker.Check(ctx, t, input), mode)
}

// byHook is a verdict a hook decided, recorded as the hook's.
func (g *governance) byHook(allow bool, reason string) engine.Verdict {
	rec := permission.Record{Decision: permission.Deny, By: "hook", Reason: reason, Mode: g.checker.Mode()}
	if allow {
		rec.Decision = permission.Allow
	}
	return engine.Verdict{Allow: allow, Reason: reason, Record: rec}
}

func verdictOf(d permission.Decision, mode permission.Mode) engine.Verdict {
	return engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(mode)}
}

// afterTool runs the PostToolUse hooks on a call that succeeded: their
// feedback and context are added to the result the model reads.
func (g *governance) afterTool(ctx context.Context, t tool.Tool, call model.Block, res tool.Result) tool.Result {
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

// beforePrompt attaches the SessionStart context to the run's first
// prompt and runs the UserPromptSubmit hooks: a block ends the run
// before anything is recorded; their context goes with the prompt.
func (g *governance) beforePrompt(ctx context.Context, in engine.Input) (engine.Input, error) {
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
		return in, hookStopped{out.Name, out.StopReason}
	case out.Blocked:
		return in, fmt.Errorf("the %s hook blocked the prompt: %s", out.Name, out.Reason)
	}
	if a, ok := out.Attachment(); ok {
		in.Attachments = append(in.Attachments, a)
	}
	return in, nil
}

// beforeStop runs the Stop hooks when the model ends its turn; a hook
// that blocks keeps the turn going with its reason.
func (g *governance) beforeStop(ctx context.Context, res *engine.Result, again bool) string {
	return g.stopVerdict(g.hooks.Stop(ctx, again, res.Text), "the turn end")
}

// stopVerdict reports a Stop or SubagentStop hook's outcome and returns
// the reason to keep working, "" to let what (the turn, the subagent)
// end.
func (g *governance) stopVerdict(out hook.StopOutcome, what string) string {
	g.report(out.Outcome)
	if out.Stop && out.Event == hook.SubagentStop {
		// It ends the subagent, not the run: the session goes on.
		fmt.Fprintf(g.stderr, "cairn: the %s hook ended the subagent%s\n", out.Name, sentence(out.StopReason))
		return ""
	}
	if out.Stop {
		fmt.Fprintln(g.stderr, "cairn:", hookStopped{out.Name, out.StopReason})
		return ""
	}
	if !out.Blocked {
		return ""
	}
	return "The " + out.Name + " hook did not let " + what + " yet: " + out.Reason
}

// subagentStart runs the SubagentStart hooks of a subagent's type; the
// context they give goes with its task.
func (g *governance) subagentStart(ctx context.Context, a agent.Subagent) []engine.Attachment {
	out := g.hooks.SubagentStart(ctx, hookSubagent(a))
	g.report(out.Outcome)
	if att, ok := out.Attachment(); ok {
		return []engine.Attachment{att}
	}
	return nil
}

// subagentStop runs the SubagentStop hooks when a subagent ends its turn:
// what beforeStop is to the session, for the subagent. A hook that
// blocks keeps it at work, with its reason.
func (g *governance) subagentStop(ctx context.Context, a agent.Subagent, res *engine.Result, again bool) string {
	return g.stopVerdict(g.hooks.SubagentStop(ctx, hookSubagent(a), again, res.Text), "the subagent finish")
}

func hookSubagent(a agent.Subagent) hook.Subagent {
	return hook.Subagent{ID: a.ID, Type: a.Type, TranscriptPath: a.TranscriptPath}
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

// denials collects refused calls; safe for concurrent use.
type denials struct {
	mu    sync.Mutex
	calls []map[string]any
}

func (d *denials) add(call model.Block) {
	d.mu.Lock()
	d.calls = append(d.calls, map[string]any{"tool_name": call.Name, "tool_use_id": call.ID, "tool_input": json.RawMessage(call.Input)})
	d.mu.Unlock()
}

func (d *denials) list() []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any{}, d.calls...)
}

// errReported is returned after the printer has already described the
// failure on stdout; only the exit code remains to set.
var errReported = errors.New("the turn failed")

// slashCommand splits "/name args" into its parts.
func slashCommand(prompt string) (name, rest string, ok bool) {
	if !strings.HasPrefix(prompt, "/") || strings.HasPrefix(prompt, "//") {
		return "", "", false
	}
	name, rest, _ = strings.Cut(prompt[1:], " ")
	if name == "" || strings.ContainsAny(name, "/\\") {
		return "", "", false // a path, not a command
	}
	return name, strings.TrimSpace(rest), true
}

// runSlash runs a slash command given as the prompt of a headless run.
func runSlash(ctx context.Context, env Env, out *printer, ag *agent.Agent, name, rest string) error {
	switch name {
	case "context":
		conv, err := ag.Conversation(ctx)
		if err != nil {
			return err
		}
		live, err := liveOf(ctx, ag)
		if err != nil {
			return err
		}
		rep, err := buildContextReport(ctx, env, conv, ag.ModelName(), live)
		if err != nil {
			return err
		}
		var b strings.Builder
		printContext(&b, rep)
		return out.finishText(b.String())
	case "compact":
		rep, err := ag.Compact(ctx, rest)
		if noGain := (*compact.NoGainError)(nil); errors.As(err, &noGain) {
			return out.finishText("N" + strings.TrimPrefix(noGain.Error(), "n") + ".\n") // the session is as it was
		}
		if rep != nil {
			out.compacted(rep)
		}
		if err != nil {
			return fmt.Errorf("compaction failed: %w", err)
		}
		return out.finishText(fmt.Sprintf("Compacted: %s (%s → %s tokens).\n", rep.Summary, tokens.Thousands(rep.PreTokens), tokens.Thousands(rep.PostTokens)))
	case "pin":
		pin, err := ag.Pin(ctx, rest)
		if err != nil {
			return err
		}
		return out.finishText(compact.PinnedSay(pin, 0) + "\n")
	case "summary":
		notes, err := ag.Summary(ctx)
		if err != nil {
			return err
		}
		return out.finishText(notes)
	}
	return usagef("unknown command /%s; headless runs know /context, /compact, /pin, /summary and the custom commands and skills of .claude/commands, .claude/skills and their kin (cairn memory explain lists them)", name)
}

// contextManagement reports whether requests may ask the server to clear
// old tool results: only Anthropic's API does, and CAIRN_DISABLE_CONTEXT_
// MANAGEMENT=1 turns it off for compatible servers that lack the beta.
func contextManagement(env Env, c *modelChoice) bool {
	return c.Provider == "anthropic" && !truthy(env.Getenv("CAIRN_DISABLE_CONTEXT_MANAGEMENT"))
}

// earlyCompactAt reads CAIRN_EARLY_COMPACT_AT: the context size, in
// tokens, at which the session compacts to its notes before the
// auto-compaction threshold; "off" (or 0, or a negative number) never
// does; unset or unreadable is cairn's default.
func earlyCompactAt(env Env) int64 {
	v := strings.TrimSpace(env.Getenv("CAIRN_EARLY_COMPACT_AT"))
	if v == "" {
		return 0
	}
	if strings.EqualFold(v, "off") {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	if n <= 0 {
		return -1
	}
	return n
}

// truthy reads an environment flag: 1, true, yes or on.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// startSweep runs the daily retention sweep in the background and returns
// a function that stops it and waits.
func startSweep(ctx context.Context, env Env, home session.Home) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := session.MaybeSweep(ctx, home, env.Now(), sweepOptions(home, env.Cwd, env.Now())); err != nil && ctx.Err() == nil {
			fmt.Fprintln(env.Stderr, "warning: session cleanup:", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
