package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// Outcome is what the hooks of one event decided together. Results are
// folded in settings order, so an Outcome does not depend on which hook
// finished first.
type Outcome struct {
	// Event is the event that ran; Name is how messages name it
	// ("PostToolUse:Bash", "SessionStart:startup", "Stop").
	Event Event
	Name  string
	// Blocked is set when a hook exited with code 2 or answered
	// "decision": "block", for the events that can be blocked; Reason
	// joins the reasons of the hooks that blocked (their stderr, or their
	// JSON "reason").
	Blocked bool
	Reason  string
	// Stop is set when a hook answered "continue": false: the agent
	// should stop after this event. StopReason is for the user.
	Stop       bool
	StopReason string
	// Context is additional context for the model, one entry a hook.
	Context []string
	// Messages are for the user, not the model: systemMessage, hooks that
	// failed (an exit code other than 0 and 2), timed out or could not
	// start, and blocking exits of events that cannot block.
	Messages []string
	// Results are the hooks that ran, in settings order.
	Results []Result
}

// Ran reports whether any hook ran.
func (o Outcome) Ran() bool { return len(o.Results) > 0 }

// Decision is a PreToolUse hook's answer about a call.
type Decision string

// The permission decisions a PreToolUse hook can give.
const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// rank orders decisions when hooks disagree: deny beats ask beats allow.
func (d Decision) rank() int {
	switch d {
	case Deny:
		return 3
	case Ask:
		return 2
	case Allow:
		return 1
	}
	return 0
}

// Source says how a session started, for SessionStart hooks (and their
// matchers).
type Source string

// Sources of a session.
const (
	SourceStartup Source = "startup"
	SourceResume  Source = "resume"
	SourceClear   Source = "clear"
	SourceCompact Source = "compact"
)

// Trigger says what started a compaction, for PreCompact and PostCompact
// hooks (and their matchers).
type Trigger string

// Triggers of a compaction.
const (
	TriggerManual Trigger = "manual"
	TriggerAuto   Trigger = "auto"
)

// Subagent is a subagent (a Task call's child agent) as SubagentStart
// and SubagentStop hooks see it.
type Subagent struct {
	// ID is the subagent's id (agent_id); Type is its kind (agent_type),
	// which the events' matchers match.
	ID, Type string
	// TranscriptPath is the subagent's own transcript
	// (agent_transcript_path); transcript_path stays the session's.
	TranscriptPath string
}

// ToolCall is a tool call as hooks see it.
type ToolCall struct {
	Name string
	// ID is the tool_use id.
	ID    string
	Input json.RawMessage
}

// PreToolUseOutcome is what PreToolUse hooks decided about a call.
type PreToolUseOutcome struct {
	Outcome
	// Decision is the strongest answer of the hooks (deny, then ask, then
	// allow); "" when none answered. An exit code 2 is a deny with the
	// hook's stderr as the reason. Outcome.Reason explains Decision, and
	// Blocked is set for a deny.
	Decision Decision
	// UpdatedInput replaces the call's input when set: the first hook in
	// settings order that returned one wins.
	UpdatedInput json.RawMessage
}

// PostToolUseOutcome is what PostToolUse hooks said about a call's
// result: Blocked with Reason is feedback for the model (the call has
// run; its result stays), Context is added for the model.
type PostToolUseOutcome struct{ Outcome }

// PromptOutcome is what UserPromptSubmit hooks decided: Blocked refuses
// the prompt (Reason is for the user; the prompt is not recorded or
// sent); Context — plain stdout of a hook that exited 0, and
// additionalContext — goes to the model with the prompt.
type PromptOutcome struct{ Outcome }

// SessionStartOutcome carries the context SessionStart hooks give the
// model (plain stdout of hooks that exited 0, and additionalContext).
// SessionStart cannot be blocked.
type SessionStartOutcome struct{ Outcome }

// StopOutcome is what Stop hooks decided when the model ended its turn
// (SubagentStop hooks, when a subagent's did): Blocked keeps the turn
// going, with Reason sent to the model — unless Stop is also set, which
// ends it whatever the other hooks said.
type StopOutcome struct{ Outcome }

// SubagentStartOutcome carries the context SubagentStart hooks give a
// subagent (additionalContext), which goes with its task. SubagentStart
// cannot be blocked.
type SubagentStartOutcome struct{ Outcome }

// PreCompactOutcome is what PreCompact hooks decided before a
// compaction: Blocked cancels it (Reason is for the user); Instructions
// — plain stdout of the hooks that exited 0 — are added to the
// compaction's custom instructions.
type PreCompactOutcome struct {
	Outcome
	Instructions string
}

// PostCompactOutcome is what PostCompact hooks said after a compaction;
// only Messages and Stop are meaningful.
type PostCompactOutcome struct{ Outcome }

// common are the fields of every hook input.
type common struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  Event  `json:"hook_event_name"`
}

func (r *Runner) common(e Event) common {
	var s Session
	if r.opts.Session != nil {
		s = r.opts.Session()
	}
	if s.Cwd == "" {
		s.Cwd = r.opts.ProjectDir
	}
	return common{SessionID: s.ID, TranscriptPath: s.TranscriptPath, Cwd: s.Cwd, PermissionMode: s.PermissionMode, HookEventName: e}
}

// PreToolUse runs the PreToolUse hooks whose matcher accepts the call's
// tool name, before the permission check.
func (r *Runner) PreToolUse(ctx context.Context, call ToolCall) PreToolUseOutcome {
	if !r.has(PreToolUse, call.Name) {
		return PreToolUseOutcome{}
	}
	in := struct {
		common
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
		ToolUseID string          `json:"tool_use_id"`
	}{r.common(PreToolUse), call.Name, validJSON(call.Input), call.ID}
	o := r.fire(ctx, PreToolUse, call.Name, in)
	return preToolUse(o)
}

// preToolUse folds the hooks' permission answers into one decision.
func preToolUse(o Outcome) PreToolUseOutcome {
	out := PreToolUseOutcome{Outcome: o}
	var reasons []string
	for _, res := range o.Results {
		d, reason := permissionAnswer(&out.Outcome, res)
		if d.rank() > out.Decision.rank() {
			out.Decision, reasons = d, nil
		}
		if d != "" && d == out.Decision && reason != "" {
			reasons = append(reasons, reason)
		}
		if sp := specific(res, PreToolUse); sp != nil && sp.UpdatedInput != nil && out.UpdatedInput == nil {
			if isObject(sp.UpdatedInput) {
				out.UpdatedInput = sp.UpdatedInput
			} else {
				out.note("hook %q returned an updatedInput that is not a JSON object; it is ignored", res.Command.Command)
			}
		}
	}
	out.Blocked = out.Decision == Deny
	out.Reason = strings.Join(reasons, "\n")
	return out
}

// permissionAnswer is one hook's answer about a call, and why.
func permissionAnswer(o *Outcome, res Result) (Decision, string) {
	if res.Err == nil && res.Exit == 2 {
		return Deny, blockReason(res)
	}
	if res.Output == nil {
		return "", ""
	}
	if sp := specific(res, PreToolUse); sp != nil && sp.PermissionDecision != "" {
		d := Decision(sp.PermissionDecision)
		if d.rank() == 0 {
			o.note("hook %q answered permissionDecision %q; only allow, deny and ask mean something, so it is ignored", res.Command.Command, sp.PermissionDecision)
			return "", ""
		}
		return d, firstNonEmpty(sp.PermissionDecisionReason, res.Output.Reason)
	}
	switch res.Output.Decision { // the older spelling
	case "approve":
		return Allow, res.Output.Reason
	case "block":
		return Deny, firstNonEmpty(res.Output.Reason, fmt.Sprintf("blocked by the hook %q", res.Command.Command))
	}
	return "", ""
}

// PostToolUse runs the PostToolUse hooks whose matcher accepts the call's
// tool name, after the call succeeded. response is the tool's own record
// of the call (tool_response).
func (r *Runner) PostToolUse(ctx context.Context, call ToolCall, response any) PostToolUseOutcome {
	if !r.has(PostToolUse, call.Name) {
		return PostToolUseOutcome{}
	}
	in := struct {
		common
		ToolName     string          `json:"tool_name"`
		ToolInput    json.RawMessage `json:"tool_input"`
		ToolResponse any             `json:"tool_response"`
		ToolUseID    string          `json:"tool_use_id"`
	}{r.common(PostToolUse), call.Name, validJSON(call.Input), response, call.ID}
	return PostToolUseOutcome{r.fire(ctx, PostToolUse, call.Name, in)}
}

// UserPromptSubmit runs the UserPromptSubmit hooks before prompt is
// recorded and sent.
func (r *Runner) UserPromptSubmit(ctx context.Context, prompt string) PromptOutcome {
	if !r.has(UserPromptSubmit, "") {
		return PromptOutcome{}
	}
	in := struct {
		common
		Prompt string `json:"prompt"`
	}{r.common(UserPromptSubmit), prompt}
	return PromptOutcome{r.fire(ctx, UserPromptSubmit, "", in)}
}

// SessionStart runs the SessionStart hooks whose matcher accepts source
// when a session opens; model names the session's model ("" leaves it
// out).
func (r *Runner) SessionStart(ctx context.Context, source Source, model string) SessionStartOutcome {
	if !r.has(SessionStart, string(source)) {
		return SessionStartOutcome{}
	}
	in := struct {
		common
		Source Source `json:"source"`
		Model  string `json:"model,omitempty"`
	}{r.common(SessionStart), source, model}
	return SessionStartOutcome{r.fire(ctx, SessionStart, string(source), in)}
}

// Stop runs the Stop hooks when the model ends its turn. active is set
// when a Stop hook already kept this turn going (stop_hook_active), so a
// hook can let the turn end the second time; lastMessage is the text of
// the model's final reply.
func (r *Runner) Stop(ctx context.Context, active bool, lastMessage string) StopOutcome {
	if !r.has(Stop, "") {
		return StopOutcome{}
	}
	in := struct {
		common
		StopHookActive       bool   `json:"stop_hook_active"`
		LastAssistantMessage string `json:"last_assistant_message"`
	}{r.common(Stop), active, lastMessage}
	return StopOutcome{r.fire(ctx, Stop, "", in)}
}

// SubagentStart runs the SubagentStart hooks whose matcher accepts the
// subagent's type, before the subagent sends its first request.
func (r *Runner) SubagentStart(ctx context.Context, a Subagent) SubagentStartOutcome {
	if !r.has(SubagentStart, a.Type) {
		return SubagentStartOutcome{}
	}
	in := struct {
		common
		AgentID   string `json:"agent_id"`
		AgentType string `json:"agent_type"`
	}{r.common(SubagentStart), a.ID, a.Type}
	return SubagentStartOutcome{r.fire(ctx, SubagentStart, a.Type, in)}
}

// SubagentStop runs the SubagentStop hooks whose matcher accepts the
// subagent's type when the subagent ends its turn: what Stop hooks are
// to the session, they are to the subagent. Blocked keeps the subagent
// going with Reason as its next message; active is set when such an
// answer already kept it going (stop_hook_active); lastMessage is the
// text of the subagent's final reply.
func (r *Runner) SubagentStop(ctx context.Context, a Subagent, active bool, lastMessage string) StopOutcome {
	if !r.has(SubagentStop, a.Type) {
		return StopOutcome{}
	}
	in := struct {
		common
		StopHookActive       bool   `json:"stop_hook_active"`
		AgentID              string `json:"agent_id"`
		AgentType            string `json:"agent_type"`
		AgentTranscriptPath  string `json:"agent_transcript_path"`
		LastAssistantMessage string `json:"last_assistant_message"`
	}{r.common(SubagentStop), active, a.ID, a.Type, a.TranscriptPath, lastMessage}
	return StopOutcome{r.fire(ctx, SubagentStop, a.Type, in)}
}

// PreCompact runs the PreCompact hooks whose matcher accepts trigger
// before a compaction; instructions are the user's (/compact TEXT), ""
// for none.
func (r *Runner) PreCompact(ctx context.Context, trigger Trigger, instructions string) PreCompactOutcome {
	if !r.has(PreCompact, string(trigger)) {
		return PreCompactOutcome{}
	}
	in := struct {
		common
		Trigger            Trigger `json:"trigger"`
		CustomInstructions string  `json:"custom_instructions"`
	}{r.common(PreCompact), trigger, instructions}
	o := r.fire(ctx, PreCompact, string(trigger), in)
	var parts []string
	for _, res := range o.Results {
		if res.Err == nil && res.Exit == 0 && res.Output == nil {
			if s := strings.TrimSpace(res.Stdout); s != "" {
				parts = append(parts, s)
			}
		}
	}
	return PreCompactOutcome{Outcome: o, Instructions: strings.Join(parts, "\n\n")}
}

// PostCompact runs the PostCompact hooks whose matcher accepts trigger
// after a compaction; summary is the summary the compaction wrote.
func (r *Runner) PostCompact(ctx context.Context, trigger Trigger, summary string) PostCompactOutcome {
	if !r.has(PostCompact, string(trigger)) {
		return PostCompactOutcome{}
	}
	in := struct {
		common
		Trigger        Trigger `json:"trigger"`
		CompactSummary string  `json:"compact_summary"`
	}{r.common(PostCompact), trigger, summary}
	return PostCompactOutcome{r.fire(ctx, PostCompact, string(trigger), in)}
}

// fire encodes input, runs the event's hooks and folds their results.
func (r *Runner) fire(ctx context.Context, e Event, query string, input any) Outcome {
	o := Outcome{Event: e, Name: string(e)}
	if usesMatcher(e) && query != "" {
		o.Name += ":" + query
	}
	b, err := jsonw.Marshal(input)
	if err != nil { // inputs are plain values; this is a bug
		o.Messages = append(o.Messages, fmt.Sprintf("%s hooks did not run: encode their input: %v", o.Name, err))
		return o
	}
	o.Results = r.Run(ctx, e, query, b)
	o.fold()
	return o
}

// fold reads each result, in settings order, into the outcome's common
// fields.
func (o *Outcome) fold() {
	for _, res := range o.Results {
		cmd := res.Command.Command
		switch {
		case res.Err != nil:
			if !errors.Is(res.Err, context.Canceled) {
				o.note("hook %q: %v", cmd, res.Err)
			}
		case res.Exit == 2:
			if canBlock(o.Event) {
				o.block(blockReason(res))
			} else {
				o.note("hook %q exited with code 2: %s", cmd, blockReason(res))
			}
		case res.Exit != 0:
			o.note("hook %q failed with exit code %d%s", cmd, res.Exit, colon(res.Stderr))
		case res.Output != nil:
			o.readOutput(res)
		case contextFromStdout(o.Event):
			if s := strings.TrimSpace(res.Stdout); s != "" {
				o.Context = append(o.Context, s)
			}
		}
	}
}

// readOutput reads the JSON answer of a hook that exited 0.
func (o *Outcome) readOutput(res Result) {
	out := res.Output
	if out.Continue != nil && !*out.Continue {
		o.Stop = true
		if out.StopReason != "" {
			o.StopReason = joinLine(o.StopReason, out.StopReason)
		}
	}
	if out.SystemMessage != "" {
		o.Messages = append(o.Messages, o.Name+" hook: "+out.SystemMessage)
	}
	if out.Decision == "block" && o.Event != PreToolUse {
		if canBlock(o.Event) {
			o.block(firstNonEmpty(out.Reason, fmt.Sprintf("blocked by the hook %q", res.Command.Command)))
		} else {
			o.note("hook %q answered decision \"block\", which %s hooks cannot do; it is ignored", res.Command.Command, o.Event)
		}
	}
	if sp := out.Specific; sp != nil {
		if sp.HookEventName != "" && sp.HookEventName != string(o.Event) {
			o.note("hook %q answered hookSpecificOutput for %s while running for %s; those fields are ignored", res.Command.Command, sp.HookEventName, o.Event)
			return
		}
		if sp.AdditionalContext != "" {
			o.Context = append(o.Context, sp.AdditionalContext)
		}
	}
}

func (o *Outcome) block(reason string) {
	o.Blocked = true
	o.Reason = joinLine(o.Reason, reason)
}

// note adds a message for the user, naming the event.
func (o *Outcome) note(format string, args ...any) {
	o.Messages = append(o.Messages, o.Name+" "+fmt.Sprintf(format, args...))
}

// specific returns a result's hookSpecificOutput when it is for event.
func specific(res Result, e Event) *Specific {
	if res.Output == nil || res.Output.Specific == nil {
		return nil
	}
	sp := res.Output.Specific
	if sp.HookEventName != "" && sp.HookEventName != string(e) {
		return nil
	}
	return sp
}

// canBlock reports whether exit code 2 and "decision": "block" block the
// event; for the others they are only reported to the user.
func canBlock(e Event) bool {
	switch e {
	case PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, PreCompact:
		return true
	}
	return false
}

// contextFromStdout reports whether a hook's plain stdout (exit 0) is
// context for the model.
func contextFromStdout(e Event) bool {
	return e == UserPromptSubmit || e == SessionStart
}

// blockReason is what a hook that exited 2 said: its stderr, or a line
// naming it when it said nothing.
func blockReason(res Result) string {
	if s := strings.TrimSpace(res.Stderr); s != "" {
		return s
	}
	return fmt.Sprintf("the hook %q exited with code 2 without saying why", res.Command.Command)
}

func colon(stderr string) string {
	if s := strings.TrimSpace(stderr); s != "" {
		return ": " + s
	}
	return ""
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// validJSON returns raw, or null when it is not JSON, so an input always
// encodes.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return json.RawMessage("null")
	}
	return raw
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
