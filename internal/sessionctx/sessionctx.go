// Package sessionctx is the context a session adds to the conversation
// besides the user's words (SPEC M1–M5): the instruction files
// (CLAUDE.md and kin) that changed between turns, those of the folders a
// tool call worked in, those a compaction carries through, and the
// memories the small model recalls for each prompt, in the background.
// Context is a middleware.Provider.
package sessionctx

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Attachment types the context adds to prompts.
const (
	// InstructionsType carries instruction files: those a new session
	// starts with, those a compaction carries, those that changed.
	InstructionsType = "claude_md"
	// RecallType carries recalled memories.
	RecallType = "relevant_memories"
)

// Intro opens a context reminder, as Claude Code words it.
const Intro = "As you answer the user's questions, you can use the following context:\n"

// Options say what a Context works with.
type Options struct {
	// Instructions are the session's instruction files; nil has none.
	Instructions *instructions.Tracker
	// Recall, when set, picks the memories that go with each prompt.
	Recall *memory.Recaller
	// RecallDone, when set, hears that a recall finished with n memories
	// (tests, measurements).
	RecallDone func(n int)
	// Tool finds the session's tool a call names, for the files the call
	// worked on (tool.TouchedPaths); nil looks for none.
	Tool func(name string) (tool.Tool, bool)
	// Now is the clock, for the ages of memories; time.Now when nil.
	Now func() time.Time
	// Warn hears of a recall that failed. May be nil.
	Warn func(string)
}

// Context is the session's context provider. Its methods are safe for
// concurrent use.
type Context struct {
	o Options

	mu       sync.Mutex
	inFlight bool              // a recall runs
	closed   bool              // Close was called: no recall starts
	ready    []memory.Recalled // recalled and not yet shown
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the recall in flight
}

// New returns a session's context. entries, the transcript the session
// goes on from (nil for a new one), say which instruction files the
// model has seen already.
func New(o Options, entries []*transcript.Entry) *Context {
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Context{o: o}
	if o.Instructions != nil {
		for i := range entries {
			if e := entries[i]; e.Type == transcript.TypeAttachment {
				c.sawIn(e.Attachment)
			}
		}
	}
	return c
}

// FileRecord is how an attachment records which instruction file it
// showed the model, so a resumed session knows.
type FileRecord struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// Records are the records of files, for an attachment's
// "instructionFiles".
func Records(files []instructions.File) []FileRecord {
	out := make([]FileRecord, len(files))
	for i, f := range files {
		out[i] = FileRecord{f.Path, f.Hash()}
	}
	return out
}

// sawIn reads the instruction files an attachment line showed the model.
func (c *Context) sawIn(raw json.RawMessage) {
	var a struct {
		Files []FileRecord `json:"instructionFiles"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	for _, f := range a.Files {
		c.o.Instructions.Saw(f.Path, f.Hash)
	}
}

// Prompt implements middleware.Provider: it returns the instruction
// files that changed since the model saw them and the memories recalled
// too late for the previous turn, and starts recalling memories for
// text, in the background.
func (c *Context) Prompt(ctx context.Context, text string) []engine.Attachment {
	var out []engine.Attachment
	if in := c.o.Instructions; in != nil {
		if changed, removed := in.Refresh(); len(changed)+len(removed) > 0 {
			out = append(out, engine.Attachment{
				Type: InstructionsType, Data: map[string]any{"instructionFiles": Records(changed), "removed": removed},
				Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(instructions.RenderUpdate(changed, removed)))},
			})
		}
	}
	if a, ok := c.takeRecalled(); ok {
		out = append(out, a)
	}
	c.startRecall(ctx, text)
	return out
}

// startRecall asks the small model which memories bear on text, without
// holding up the turn: what it finds goes with the first request after it
// arrives — the next tool results of this turn, or the next prompt. One
// recall runs at a time; cancelling ctx does not stop it (the turn may
// end before it), Close does.
func (c *Context) startRecall(ctx context.Context, text string) {
	if c.o.Recall == nil {
		return
	}
	c.mu.Lock()
	if c.inFlight || c.closed {
		c.mu.Unlock()
		return
	}
	c.inFlight = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer cancel()
		found, err := c.o.Recall.Recall(ctx, text)
		if err != nil && c.o.Warn != nil && ctx.Err() == nil {
			c.o.Warn(err.Error())
		}
		c.mu.Lock()
		c.ready = append(c.ready, found...)
		c.inFlight = false
		c.mu.Unlock()
		if c.o.RecallDone != nil {
			c.o.RecallDone(len(found))
		}
	}()
}

// takeRecalled returns the recalled memories not yet shown, as an
// attachment.
func (c *Context) takeRecalled() (engine.Attachment, bool) {
	c.mu.Lock()
	found := c.ready
	c.ready = nil
	c.mu.Unlock()
	if len(found) == 0 {
		return engine.Attachment{}, false
	}
	paths := make([]string, len(found))
	for i, m := range found {
		paths[i] = m.Path
	}
	text := memory.Render(found, c.o.Now())
	return engine.Attachment{Type: RecallType, Data: map[string]any{"memories": paths},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))}}, true
}

// Results implements middleware.Provider: to the result of each call
// that read or changed a file it adds the instruction files of the
// file's folders and the rules that now apply (Claude Code's nested
// memory); to the last result, the memories recalled since the turn
// began.
func (c *Context) Results(_ context.Context, outcomes []engine.Outcome) []engine.Outcome {
	for i, o := range outcomes {
		if c.o.Instructions == nil || o.Result.IsError {
			continue
		}
		path := c.touchedPath(o.Call)
		if path == "" {
			continue
		}
		if files := c.o.Instructions.Touch(path); len(files) > 0 {
			outcomes[i].Result.Content = withBlock(o.Result.Content, transcript.WrapSystemReminder(nestedText(files)))
		}
	}
	if a, ok := c.takeRecalled(); ok && len(outcomes) > 0 {
		last := &outcomes[len(outcomes)-1]
		last.Result.Content = withBlock(last.Result.Content, a.Rendered[0].Text)
	}
	return outcomes
}

func withBlock(content []model.Block, text string) []model.Block {
	return append(slices.Clip(content), model.TextBlock(text))
}

// nestedText introduces instruction files a file read brought in.
func nestedText(files []instructions.File) string {
	text := "Instruction files that apply to the files just worked on:"
	for _, f := range files {
		text += "\n\n" + instructions.Section(f)
	}
	return text
}

// touchedPath is the first file a call worked on, as its tool says
// (tool.PathToucher); "" when it names none.
func (c *Context) touchedPath(call model.Block) string {
	if c.o.Tool == nil {
		return ""
	}
	t, ok := c.o.Tool(call.Name)
	if !ok {
		return ""
	}
	for _, p := range tool.TouchedPaths(t, call.Input) {
		if !p.Folder {
			return p.Path
		}
	}
	return ""
}

// Survivors is what a compaction carries through verbatim besides what
// the compaction keeps itself (compact.Config.Survivors): every
// instruction file in force, recorded as seen.
func (c *Context) Survivors(context.Context) []engine.Attachment {
	in := c.o.Instructions
	if in == nil {
		return nil
	}
	files := in.Current()
	if len(files) == 0 {
		return nil
	}
	for _, f := range files {
		in.Saw(f.Path, f.Hash())
	}
	text := Intro + "# claudeMd\n" + instructions.Render(files)
	return []engine.Attachment{{
		Type: InstructionsType, Data: map[string]any{"instructionFiles": Records(files)},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))},
	}}
}

// Close implements middleware.Provider: it stops a recall in flight and
// waits for its goroutine to end.
func (c *Context) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

var _ middleware.Provider = (*Context)(nil)
