package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// MemoryOptions turn on the project's long-term memory (SPEC M1–M5).
type MemoryOptions struct {
	// Dir is the memory folder (memory.Dir).
	Dir string
	// Recall, when set, answers the recall side request; RecallModel
	// names the model it asks (the small model).
	Recall      model.Model
	RecallModel string
	// Extract runs background extraction after turns, every ExtractEvery
	// eligible turns (0: every turn).
	Extract      bool
	ExtractEvery int
	// RecallDone, when set, hears that a recall finished with n memories
	// (tests, measurements).
	RecallDone func(n int)
}

// Attachment types this file adds to prompts.
const (
	// instructionsType carries instruction files through a compaction, or
	// the ones that changed between turns.
	instructionsType = "claude_md"
	// recallType carries recalled memories.
	recallType = "relevant_memories"
	// budgetType states a prompt's token budget.
	budgetType = "token_budget"
)

// sessionContext is what a session adds to the conversation besides the
// user's words: instruction files (first prompt, changes, nested folders,
// compaction survivors), recalled memories, background memory
// extraction, and the token budget. Its methods are safe for concurrent
// use.
type sessionContext struct {
	a       *Agent
	instr   *instructions.Tracker
	mem     *MemoryOptions
	recall  *memory.Recaller
	extract *memory.Extractor

	mu       sync.Mutex
	inFlight bool               // a recall runs
	ready    []memory.Recalled  // recalled and not yet shown
	budget   *budget            // the current turn's token budget
	cancel   context.CancelFunc // stops a recall in flight at Close
}

// budget is a turn's token budget and how the turn is using it.
type budget struct {
	target  int64
	nudges  int
	lastOut int64
}

func newSessionContext(a *Agent, conv *transcript.Conversation) *sessionContext {
	o := a.opts
	s := &sessionContext{a: a, instr: o.Instructions, mem: o.Memory}
	if s.mem != nil && s.mem.Recall != nil {
		s.recall = &memory.Recaller{Dir: s.mem.Dir, Model: s.mem.Recall, ModelName: s.mem.RecallModel, Now: o.Now, Warn: o.Warn}
	}
	if s.instr != nil && conv != nil {
		for _, e := range conv.Entries {
			if e.Type == transcript.TypeAttachment {
				s.sawIn(e.Attachment)
			}
		}
	}
	return s
}

// startExtractor is called once the session's tools are known: the fork
// offers the same tools, so its request shares the conversation's cache.
func (s *sessionContext) startExtractor(tools *tool.Registry) {
	if s.mem == nil || !s.mem.Extract {
		return
	}
	o := s.a.opts
	s.extract = memory.NewExtractor(memory.ExtractConfig{
		Dir: s.mem.Dir, Model: o.Model, ModelName: o.ModelName, MaxTokens: o.MaxTokens, Tools: tools,
		Every: s.mem.ExtractEvery, Now: o.Now, Warn: o.Warn,
	})
}

// fileRecord is how an attachment records which instruction file it
// showed the model, so a resumed session knows.
type fileRecord struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

func records(files []instructions.File) []fileRecord {
	out := make([]fileRecord, len(files))
	for i, f := range files {
		out[i] = fileRecord{f.Path, f.Hash()}
	}
	return out
}

// sawIn reads the instruction files an attachment line showed the model.
func (s *sessionContext) sawIn(raw json.RawMessage) {
	var a struct {
		Files []fileRecord `json:"instructionFiles"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	for _, f := range a.Files {
		s.instr.Saw(f.Path, f.Hash)
	}
}

// memorySection is the system prompt's memory section, nil without
// memory.
func (s *sessionContext) memorySection() func(context.Context) (string, error) {
	if s.mem == nil {
		return nil
	}
	return func(context.Context) (string, error) { return memory.Prompt(s.mem.Dir), nil }
}

// contextIntro opens a context reminder, as Claude Code words it.
const contextIntro = "As you answer the user's questions, you can use the following context:\n"

// beforeTurn runs when the user sends text: it returns what goes with
// the prompt — instruction files that changed since the model saw them,
// memories recalled too late for the previous turn, the token budget —
// and starts recalling memories for text, in the background.
func (s *sessionContext) beforeTurn(ctx context.Context, text string) []engine.Attachment {
	var out []engine.Attachment
	if s.instr != nil {
		if changed, removed := s.instr.Refresh(); len(changed)+len(removed) > 0 {
			out = append(out, engine.Attachment{
				Type: instructionsType, Data: map[string]any{"instructionFiles": records(changed), "removed": removed},
				Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(instructions.RenderUpdate(changed, removed)))},
			})
		}
	}
	if a, ok := s.takeRecalled(); ok {
		out = append(out, a)
	}
	s.mu.Lock()
	s.budget = nil
	if n, ok := tokens.ParseBudget(text); ok {
		s.budget = &budget{target: n}
		note := fmt.Sprintf("The user gave this request a token budget of %s output tokens.", thousands(n))
		out = append(out, engine.Attachment{Type: budgetType, Data: map[string]any{"budget": n},
			Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(note))}})
	}
	s.mu.Unlock()
	s.startRecall(ctx, text)
	return out
}

// startRecall asks the small model which memories bear on text, without
// holding up the turn: what it finds goes with the first request after it
// arrives — the next tool results of this turn, or the next prompt. One
// recall runs at a time.
func (s *sessionContext) startRecall(ctx context.Context, text string) {
	if s.recall == nil {
		return
	}
	s.mu.Lock()
	if s.inFlight {
		s.mu.Unlock()
		return
	}
	s.inFlight = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.mu.Unlock()
	go func() {
		defer cancel()
		found, err := s.recall.Recall(ctx, text)
		if err != nil && s.a.opts.Warn != nil && ctx.Err() == nil {
			s.a.opts.Warn(err.Error())
		}
		s.mu.Lock()
		s.ready = append(s.ready, found...)
		s.inFlight = false
		s.mu.Unlock()
		if s.mem.RecallDone != nil {
			s.mem.RecallDone(len(found))
		}
	}()
}

// takeRecalled returns the recalled memories not yet shown, as an
// attachment.
func (s *sessionContext) takeRecalled() (engine.Attachment, bool) {
	s.mu.Lock()
	found := s.ready
	s.ready = nil
	s.mu.Unlock()
	if len(found) == 0 {
		return engine.Attachment{}, false
	}
	paths := make([]string, len(found))
	for i, m := range found {
		paths[i] = m.Path
	}
	text := memory.Render(found, s.a.opts.Now())
	return engine.Attachment{Type: recallType, Data: map[string]any{"memories": paths},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))}}, true
}

// shapeResults follows next (the large-result offload) and adds to the
// results the model is about to read: the instruction files of folders a
// call read or changed a file in, and rules that now apply (Claude Code's
// nested memory), with that call's result; memories recalled since the
// turn began, with the last result.
func (s *sessionContext) shapeResults(next func(context.Context, []engine.Outcome) []engine.Outcome) func(context.Context, []engine.Outcome) []engine.Outcome {
	return func(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
		if next != nil {
			outcomes = next(ctx, outcomes)
		}
		for i, o := range outcomes {
			if s.instr == nil || o.Result.IsError {
				continue
			}
			path := touchedPath(s.a.tools, o.Call)
			if path == "" {
				continue
			}
			if files := s.instr.Touch(path); len(files) > 0 {
				outcomes[i].Result.Content = withBlock(o.Result.Content, transcript.WrapSystemReminder(nestedText(files)))
			}
		}
		if a, ok := s.takeRecalled(); ok && len(outcomes) > 0 {
			last := &outcomes[len(outcomes)-1]
			last.Result.Content = withBlock(last.Result.Content, a.Rendered[0].Text)
		}
		return outcomes
	}
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
func touchedPath(reg *tool.Registry, call model.Block) string {
	t, ok := reg.Lookup(call.Name)
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

// survivors is what a compaction carries through verbatim besides what
// the compaction keeps itself: every instruction file in force.
func (s *sessionContext) survivors(context.Context) []engine.Attachment {
	if s.instr == nil {
		return nil
	}
	files := s.instr.Current()
	if len(files) == 0 {
		return nil
	}
	for _, f := range files {
		s.instr.Saw(f.Path, f.Hash())
	}
	text := contextIntro + "# claudeMd\n" + instructions.Render(files)
	return []engine.Attachment{{
		Type: instructionsType, Data: map[string]any{"instructionFiles": records(files)},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))},
	}}
}

// gate refuses writes that would break the memory index's limits, then
// asks next.
func (s *sessionContext) gate(next func(context.Context, tool.Tool, model.Block) engine.Verdict) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	if s.mem == nil {
		return next
	}
	return func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		if err := memory.CheckWrite(s.mem.Dir, call.Name, call.Input); err != nil {
			return engine.Verdict{Reason: err.Error()}
		}
		if next == nil {
			return engine.Verdict{Allow: true}
		}
		return next(ctx, t, call)
	}
}

// Budget continuation bounds: the turn goes on until 90% of the budget
// is spent, or a continuation produced less than minProgress output
// tokens (the model had nothing more to do), or maxNudges continuations.
const (
	budgetDone  = 0.9
	minProgress = 500
	maxNudges   = 100
)

// beforeStop asks hooks (the Stop hooks) first; when they let the turn
// end and the turn has a token budget not yet used, it keeps the turn
// going with a note of how much is spent.
func (s *sessionContext) beforeStop(hooks func(context.Context, *engine.Result, bool) string) func(context.Context, *engine.Result, bool) string {
	return func(ctx context.Context, res *engine.Result, again bool) string {
		if hooks != nil {
			// The Stop hooks may read the transcript: the reply that ends
			// the turn is in it first.
			if err := s.a.writer.Flush(ctx); err != nil && s.a.opts.Warn != nil {
				s.a.opts.Warn(fmt.Sprintf("the transcript is not written up to the end of the turn: %v", err))
			}
			if more := hooks(ctx, res, again); more != "" {
				return more
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		b := s.budget
		if b == nil {
			return ""
		}
		spent := res.Total.OutputTokens
		if float64(spent) >= budgetDone*float64(b.target) || (b.nudges > 0 && spent-b.lastOut < minProgress) || b.nudges >= maxNudges {
			s.budget = nil
			return ""
		}
		b.nudges++
		b.lastOut = spent
		return fmt.Sprintf("Token budget: %s of %s output tokens spent (%d%%). Keep working on the request: check, extend and improve what you have done. If the work is truly complete, reply with a one-line summary and stop.",
			thousands(spent), thousands(b.target), spent*100/b.target)
	}
}

// afterTurn passes a turn's events on and, when the turn ends well,
// hands the conversation to background memory extraction.
func (s *sessionContext) afterTurn(ctx context.Context, turnStart int, events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
	if s.extract == nil {
		return events
	}
	return func(yield func(engine.Event, error) bool) {
		done := false
		for ev, err := range events {
			if err == nil && ev.Type == engine.EventDone {
				done = true
			}
			if !yield(ev, err) {
				return
			}
		}
		if !done {
			return
		}
		system, err := s.a.prompts.Build(ctx)
		if err != nil {
			return
		}
		s.extract.AfterTurn(system, s.a.engine.History(), turnStart)
	}
}

// close stops a recall in flight and waits, at most a while, for an
// extraction to finish writing.
func (s *sessionContext) close() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	if s.extract != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.extract.Wait(ctx)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// compactGuidance is what the instruction files in force say about
// compaction ("# Compact instructions" sections): every summary request
// follows it, automatic or not.
func (s *sessionContext) compactGuidance() string {
	if s.instr == nil {
		return ""
	}
	return instructions.CompactGuidance(s.instr.Current())
}
