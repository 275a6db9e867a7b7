package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/gitinfo"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tokens"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// SubagentsDir is the folder under a session's sidecar folder that holds
// its subagents' transcripts, agent-<agentId>.jsonl, as Claude Code keeps
// them.
const SubagentsDir = "subagents"

// Subagent is a subagent as the session's hook points see it.
type Subagent struct {
	// ID is the subagent's agentId; Type is the kind of agent it is (the
	// Task call's subagent_type).
	ID, Type string
	// TranscriptPath is the subagent's own transcript.
	TranscriptPath string
}

// subagents runs the Task tool's child agents (SPEC E4). Each child is a
// fresh conversation whose first message is its task: it gets the
// session's model, system prompt (with a note saying it is a subagent and
// the agent's own instructions), tools but Task and those bound to the
// session's own state, and permission gate, so it can do no more than
// the session could. Its lines go to their own sidechain transcript,
// <session>/subagents/agent-<agentId>.jsonl, through a writer of its own;
// the session's transcript gets only the Task call and its result. The
// child's messages are reported to whoever runs the call as they
// complete (tool.Report), each reply with its usage and model, so the
// session can show them and count what they cost; the session's
// SubagentStart and SubagentStop hook points run at its start and end.
//
// Safe for concurrent use: every Run builds its own engine session,
// transcript, compaction and read state, and what it shares with the
// session — the model client, the tools, the gate, the file history —
// is safe for concurrent use.
type subagents struct{ a *Agent }

// tools returns what a subagent of kind def may use: the session's tools
// that def allows, each as the tool says a subagent gets it
// (tool.SessionScoped): those that work on the session's own state are
// left out or replaced by a copy with state of the subagent's own.
func (s subagents) tools(def subagent.Definition) []tool.Tool {
	var out []tool.Tool
	for _, t := range s.a.tools.Tools() {
		if !def.Allows(t.Spec().Name) {
			continue
		}
		if t = tool.ForSubagent(t); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// Run implements coretools.Subagents.
func (s subagents) Run(ctx context.Context, env *tool.Env, call coretools.SubagentCall) (coretools.SubagentReport, error) {
	a := s.a
	o := a.opts
	start := o.Now()
	id := agentID(o.NewUUID())
	rep := coretools.SubagentReport{AgentID: id}

	system, err := a.prompts.Build(ctx)
	if err != nil {
		return rep, fmt.Errorf("build the subagent's system prompt: %w", err)
	}
	system = append(slices.Clip(system), model.SystemBlock{Text: subagentNote(call.Agent)})
	reg, err := tool.NewRegistry(s.tools(call.Agent)...)
	if err != nil {
		return rep, err
	}
	name, window, maxTokens := o.ModelName, o.Window, o.MaxTokens
	if n := call.Agent.ModelName(o.ModelName); n != name {
		name = n
		if w, ok := tokens.ForModel(n); ok {
			w.Cap = window.Cap
			window, maxTokens = w, int(min(w.MaxOutput, int64(maxTokens)))
		}
	}

	store, ok := transcript.SidecarStore(a.store, a.id, SubagentsDir)
	if !ok {
		return rep, fmt.Errorf("the session store %T keeps no subagent transcripts", a.store)
	}
	for range 3 { // ids are random: a clash is all but impossible
		src, err := store.OpenSource(ctx, "agent-"+id)
		if err != nil {
			break
		}
		src.Close()
		id = agentID(o.NewUUID())
	}
	rep.AgentID = id
	app, err := store.OpenAppender(ctx, "agent-"+id)
	if err != nil {
		return rep, fmt.Errorf("open the subagent's transcript: %w", err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{Eager: o.Eager, Now: o.Now, OnError: a.saveFailed})
	defer w.Close()
	rec := session.NewRecorder(w, session.RecorderOptions{
		Envelope: session.Envelope{
			SessionID: a.id, CWD: env.Cwd(), Version: Version, GitBranch: gitinfo.Branch(o.Cwd),
			Entrypoint: o.Entrypoint, IsSidechain: true, AgentID: id,
		},
		PermissionMode: o.PermissionMode, Mode: o.Mode, Now: o.Now, NewUUID: o.NewUUID,
	})
	child := tool.NewEnv(env.Cwd())
	child.ProjectDir, child.SessionDir, child.Now, child.BeforeChange = env.ProjectDir, a.dir, env.Now, env.BeforeChange
	ct := &childTranscript{rec: rec, w: w, store: store, key: "agent-" + id}
	if fs, ok := store.(*transcript.FileStore); ok {
		ct.path = fs.Path(ct.key)
	}
	comp := compact.New(compact.Config{
		Model: o.Model, ModelName: name, Window: window, Disabled: o.DisableAutoCompact, SummaryTimeout: o.SummaryTimeout,
		Transcript: ct, CWD: env.Cwd(), Tools: reg, Now: o.Now,
	})
	info := Subagent{ID: id, Type: call.Agent.Name, TranscriptPath: ct.path}
	var beforeStop func(context.Context, *engine.Result, bool) string
	if stop := o.Middleware.SubagentStop; stop != nil {
		beforeStop = func(ctx context.Context, res *engine.Result, again bool) string {
			// The hooks may read the subagent's transcript: its final
			// reply must be in it. A failed write shows at TurnDone.
			w.Flush(ctx)
			return stop(ctx, info, res, again)
		}
	}
	eng := engine.New(engine.Config{
		Model: o.Model, ModelName: name, MaxTokens: maxTokens, Tools: reg, Env: child,
		System:   func(context.Context) ([]model.SystemBlock, error) { return system, nil },
		Recorder: rec, Prepare: comp.Prepare, Gate: middleware.CheckFunc(a.mw.gate), AfterTool: o.Middleware.AfterTool,
		ShapeResults: compact.Offload(a.offloadConfig(reg)),
		BeforeStop:   beforeStop, MaxTurns: o.MaxTurns, Now: o.Now,
	}, nil)

	in := engine.Input{
		Message:     model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(call.Prompt)}},
		Attachments: []engine.Attachment{a.subagentContext()},
	}
	if start := o.Middleware.SubagentStart; start != nil {
		in.Attachments = append(in.Attachments, start(ctx, info)...)
	}
	var res *engine.Result
	prompted := false
	for ev, err := range eng.Run(ctx, in) {
		if err != nil {
			return rep, fmt.Errorf("subagent %s: %w", id, err)
		}
		switch ev.Type {
		case engine.EventUser:
			// Whoever runs the call gets the child's messages as they
			// complete: its task as given (the context it travels with is
			// the harness's), then its tool results and what hooks said.
			msg := ev.Message
			if !prompted {
				prompted = true
				msg = &model.Message{Role: model.RoleUser, Content: in.Message.Content, IDs: ev.Message.IDs}
			}
			tool.Report(ctx, tool.Progress{Message: msg})
		case engine.EventAssistant:
			tool.Report(ctx, tool.Progress{Message: ev.Message, Response: ev.Response, Model: name})
		case engine.EventToolCall:
			rep.ToolUses++
			tool.ReportProgress(ctx, callLine(ev.Call))
		case engine.EventDone:
			res = ev.Done
		}
	}
	if err := w.Close(); err != nil {
		return rep, fmt.Errorf("write the subagent's transcript: %w", err)
	}
	if res == nil {
		return rep, fmt.Errorf("subagent %s: its turn ended without a result", id)
	}
	rep.Text, rep.MaxTurns, rep.Usage = res.Text, res.Stop == engine.StopMaxTurns, res.Usage
	u := res.Usage
	rep.Tokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
	rep.Duration = o.Now().Sub(start)
	return rep, nil
}

// agentID makes a subagent's short id from a fresh uuid: its last 8 hex
// digits.
func agentID(uuid string) string {
	hex := strings.ReplaceAll(uuid, "-", "")
	if len(hex) > 8 {
		hex = hex[len(hex)-8:]
	}
	return hex
}

// subagentNote closes a subagent's system prompt: what it is, how it
// ends, and its kind's own instructions.
func subagentNote(def subagent.Definition) string {
	note := "# Subagent\nYou are a subagent, started by the main agent with the Task tool to work on the task in the first message. " +
		"The main agent reads what you write; the user does not see it, and no one can answer questions: work on your own with the tools you have. " +
		"When you are done, end with a final report — one message giving the main agent everything it needs: what you found or did, " +
		"with file paths and line numbers where they matter, and anything you could not do. That message is all it receives of your work."
	if p := strings.TrimSpace(def.Prompt); p != "" {
		note += "\n\n# The " + def.Name + " agent\n" + p
	}
	return note
}

// subagentContext is the context a subagent's task travels with, as a
// new session's first prompt does: the instruction files and the date.
// It reads the instruction files as they loaded, without recording them
// as shown to the session's own model.
func (a *Agent) subagentContext() engine.Attachment {
	date := a.opts.Now().Format("2006-01-02")
	text := contextIntro
	data := map[string]any{"currentDate": date}
	if t := a.opts.Instructions; t != nil {
		if files := t.Set().Files; len(files) > 0 {
			text += "# claudeMd\n" + instructions.Render(files) + "\n"
			data["instructionFiles"] = records(files)
		}
	}
	text += "# currentDate\nToday's date is " + date + "."
	return engine.Attachment{
		Type: "cairn_context", Data: data,
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))},
	}
}

// callLine says what a subagent's tool call is about, in a line, for the
// session's progress events.
func callLine(call *model.Block) string {
	if call == nil {
		return ""
	}
	in := strings.Join(strings.Fields(string(call.Input)), " ")
	if r := []rune(in); len(r) > 120 {
		in = string(r[:120]) + "…"
	}
	return call.Name + " " + in
}

// childTranscript gives a subagent's compaction its transcript.
type childTranscript struct {
	rec   *session.Recorder
	w     *transcript.Writer
	store transcript.Store
	key   string
	// path is the transcript's file in a FileStore, else "".
	path string
}

func (t *childTranscript) Leaf() string { return t.rec.Leaf() }
func (t *childTranscript) NewEntry(typ, parent string) transcript.Entry {
	return t.rec.NewEntry(typ, parent)
}
func (t *childTranscript) Append(ctx context.Context, entries ...transcript.Entry) error {
	return t.rec.Append(ctx, entries...)
}
func (t *childTranscript) Path() string { return t.path }
func (t *childTranscript) Reload(ctx context.Context) ([]model.Message, error) {
	conv, err := written(ctx, t.w, t.store, t.key)
	if err != nil {
		return nil, err
	}
	return conv.Messages(), nil
}
