package sessionmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Prefix is the conversation an update starts from, as the main loop sent
// it: the fork repeats it unchanged and appends its instruction.
type Prefix struct {
	System   []model.SystemBlock
	Tools    []model.ToolSpec
	Messages []model.Message
	// ContextManagement and Betas are sent as the main request sent them:
	// the server clears old tool results before it caches a prompt, so a
	// fork without the same edits would not match the cached prefix.
	ContextManagement json.RawMessage
	Betas             []string
	// Covered is the uuid of the last message the update covers ("" if
	// none of Messages is in the transcript).
	Covered string
}

// maxBreakpoints is the API's limit on cache_control blocks.
const maxBreakpoints = 4

// prefixOf is the conversation an update after resp starts from: the
// request as sent, then resp when it called no tool (a tool call without
// its result cannot be sent). The request's last cache breakpoint stays
// where it was — the fork's request then reads everything up to it from
// the cache — and any other message breakpoint goes, leaving room for
// the fork's own.
func prefixOf(req *model.Request, resp *model.Response, ids []string) Prefix {
	msgs := make([]model.Message, len(req.Messages), len(req.Messages)+1)
	for i, m := range req.Messages {
		m.Content = slices.Clone(m.Content)
		for j := range m.Content {
			last := i == len(req.Messages)-1 && j == len(m.Content)-1
			if _, ok := m.Content[j].Extra["cache_control"]; ok && !last {
				m.Content[j] = uncached(m.Content[j])
			}
		}
		msgs[i] = m
	}
	marks := 0
	for _, s := range req.System {
		if s.Cache {
			marks++
		}
	}
	for _, t := range req.Tools {
		if t.Cache {
			marks++
		}
	}
	if n := len(msgs); n > 0 && marks+2 > maxBreakpoints {
		c := msgs[n-1].Content
		if k := len(c); k > 0 {
			c[k-1] = uncached(c[k-1])
		}
	}
	p := Prefix{
		System: slices.Clone(req.System), Tools: slices.Clone(req.Tools), Messages: msgs, Covered: lastID(msgs),
		ContextManagement: slices.Clone(req.ContextManagement), Betas: slices.Clone(req.Betas),
	}
	if len(model.Message{Content: resp.Content}.ToolUses()) == 0 && len(resp.Content) > 0 {
		p.Messages = append(p.Messages, model.Message{Role: model.RoleAssistant, Content: slices.Clone(resp.Content), IDs: ids})
		if len(ids) > 0 {
			p.Covered = ids[len(ids)-1]
		}
	}
	return p
}

// HistoryPrefix is the conversation an update starts from when no request
// was seen yet (a resumed session): the history with the system prompt
// and tools the next request would carry.
func HistoryPrefix(system []model.SystemBlock, tools []model.ToolSpec, history []model.Message) Prefix {
	return Prefix{System: system, Tools: tools, Messages: slices.Clone(history), Covered: lastID(history)}
}

func uncached(b model.Block) model.Block {
	b.Extra = maps.Clone(b.Extra)
	delete(b.Extra, "cache_control")
	return b
}

// lastID is the uuid of the newest message that has one.
func lastID(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if ids := msgs[i].IDs; len(ids) > 0 {
			return ids[len(ids)-1]
		}
	}
	return ""
}

// ErrNoEdit is returned when the conversation offers no Edit tool: the
// fork must offer the same tools as the conversation, so it could not
// edit the notes.
var ErrNoEdit = errors.New("the conversation has no Edit tool, so the notes cannot be updated")

// update runs one fork over p and holds the notes to their budgets.
func (k *Keeper) update(ctx context.Context, p Prefix) error {
	path := k.cfg.Path
	notes, err := k.current()
	if err != nil {
		return err
	}
	if len(p.Messages) == 0 {
		return errors.New("there is no conversation to take notes of yet; send a prompt first")
	}
	if !slices.ContainsFunc(p.Tools, func(s model.ToolSpec) bool { return s.Name == "Edit" }) {
		return ErrNoEdit
	}
	instr := prompt(k.texts.Prompt, path, notes, overBudget(notes))
	history, in := withInstruction(p.Messages, instr)

	env := tool.NewEnv(k.cfg.Cwd)
	// The fork was shown the file: it may edit it without reading it
	// first, and its edit fails if the user changes it meanwhile.
	if fi, err := os.Stat(path); err == nil {
		env.Files.Saw(path, tool.FileSeen{ModTime: fi.ModTime(), Size: fi.Size()})
	}
	reg, err := forkTools(p.Tools, k.cfg.Lookup)
	if err != nil {
		return err
	}
	sess := engine.New(engine.Config{
		Model: k.cfg.Model, ModelName: k.cfg.ModelName, MaxTokens: k.cfg.MaxTokens,
		Tools: reg, Env: env, Recorder: discard{}, Gate: Gate(path), MaxTurns: k.cfg.MaxTurns,
		System: func(context.Context) ([]model.SystemBlock, error) { return p.System, nil },
		Prepare: func(_ context.Context, prep *engine.Prep) error {
			if prep.Overflow != nil {
				return errors.New("the conversation with the notes instruction does not fit the context window")
			}
			prep.ContextManagement, prep.Betas = p.ContextManagement, p.Betas
			return nil
		},
	}, history)
	for _, err := range sess.Run(ctx, engine.Input{Message: in}) {
		if err != nil {
			if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
				err = cause
			}
			return err
		}
	}
	after, err := k.Read()
	if err != nil {
		return fmt.Errorf("read the session notes: %w", err)
	}
	if after == notes {
		return ErrUnchanged
	}
	return k.enforce()
}

// ErrUnchanged is the outcome of an update after which the notes are as
// they were: the model answered without an Edit of them that succeeded
// (an empty reply, text only, a refused tool). The notes' instruction
// always asks for Current State and the Worklog to move on, so such an
// update captured nothing, and the notes do not count as covering the
// conversation it was shown: a compaction from them would drop what they
// never took down.
var ErrUnchanged = errors.New("the model answered without editing the notes, so they cover nothing new")

// current returns the notes as they are now, writing the template first
// when there are none.
func (k *Keeper) current() (string, error) {
	notes, err := k.Read()
	if err != nil {
		return "", fmt.Errorf("read the session notes: %w", err)
	}
	if strings.TrimSpace(notes) != "" {
		return notes, nil
	}
	if err := writeAtomic(k.cfg.Path, []byte(k.texts.Template)); err != nil {
		return "", fmt.Errorf("create the session notes: %w", err)
	}
	return k.texts.Template, nil
}

// enforce cuts the sections over budget after an update, keeping the full
// text beside the notes. A file that changed while it was being checked
// (the user editing it) is left alone until the next update.
func (k *Keeper) enforce() error {
	path := k.cfg.Path
	before, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	full := fullPath(path)
	fitted, cut := fit(string(data), MaxSectionTokens, MaxTotalTokens, full)
	if len(cut) == 0 {
		return nil
	}
	if err := writeAtomic(full, data); err != nil {
		return fmt.Errorf("keep the full notes: %w", err)
	}
	if now, err := os.Stat(path); err != nil || !now.ModTime().Equal(before.ModTime()) || now.Size() != before.Size() {
		return nil
	}
	if err := writeAtomic(path, []byte(fitted)); err != nil {
		return fmt.Errorf("hold the notes to their budget: %w", err)
	}
	return nil
}

// withInstruction splits msgs plus instr into the history the fork
// continues and the message it sends: instr joins the last message when
// that is the user's (tool results), else it is a message of its own.
func withInstruction(msgs []model.Message, instr string) ([]model.Message, model.Message) {
	n := len(msgs)
	if msgs[n-1].Role == model.RoleUser {
		last := msgs[n-1]
		last.Content = append(slices.Clone(last.Content), model.TextBlock(instr))
		return msgs[:n-1], last
	}
	return msgs, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(instr)}}
}

// forkTools are the tools the main request listed, with the specs it sent
// them with; a tool the session no longer has is listed and refuses.
func forkTools(specs []model.ToolSpec, lookup func(string) (tool.Tool, bool)) (*tool.Registry, error) {
	var tools []tool.Tool
	for _, s := range specs {
		var t tool.Tool = absent{s}
		if lookup != nil {
			if real, ok := lookup(s.Name); ok {
				t = offered{real, s}
			}
		}
		tools = append(tools, t)
	}
	return tool.NewRegistry(tools...)
}

// offered is a session's tool listed with the spec the request sent.
type offered struct {
	tool.Tool
	spec model.ToolSpec
}

func (o offered) Spec() model.ToolSpec { return o.spec }

// Unwrap implements tool.Wrapper.
func (o offered) Unwrap() tool.Tool { return o.Tool }

// absent is a tool listed but not available to the fork.
type absent struct{ spec model.ToolSpec }

func (a absent) Spec() model.ToolSpec               { return a.spec }
func (absent) ReadOnly(json.RawMessage) bool        { return false }
func (absent) Destructive(json.RawMessage) bool     { return true }
func (absent) ConcurrencySafe(json.RawMessage) bool { return false }
func (a absent) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Errorf("%s is not available while updating the session notes", a.spec.Name), nil
}

// discard is the fork's recorder: its exchange stays out of the
// transcript.
type discard struct{}

func (discard) Prompt(context.Context, model.Message, []engine.Attachment) ([]string, error) {
	return nil, nil
}
func (discard) Response(context.Context, *model.Response) ([]string, error) { return nil, nil }
func (discard) Results(context.Context, *model.Response, []engine.Outcome) ([]string, error) {
	return nil, nil
}
func (discard) TurnDone(context.Context) error { return nil }
