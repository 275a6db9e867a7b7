package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/budget"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/sessionctx"
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

// contextIntro opens a context reminder, as Claude Code words it.
const contextIntro = sessionctx.Intro

// middlewares are the session's middlewares (package middleware), as
// buildMiddleware composes them from the options.
type middlewares struct {
	// context gives the instruction files and recalled memories, budget
	// the token budget; provider is both, in that order.
	context  *sessionctx.Context
	budget   *budget.Budget
	provider middleware.Provider
	// gate is the memory-write gate, then Middleware.Gate; subagents
	// share it.
	gate middleware.Gate
	// stop is Middleware.Stop (after the transcript is written up to the
	// reply), then the token budget.
	stop middleware.StopHandler
	// enders hear of each turn that ended well (memory extraction, then
	// Middleware.Enders).
	enders []middleware.Ender
}

// buildMiddleware composes the session's middlewares once its tools reg
// are known (memory extraction's fork offers the same tools, so its
// request shares the conversation's cache); closeMiddleware closes them.
func (a *Agent) buildMiddleware(conv *transcript.Conversation, reg *tool.Registry) {
	o := a.opts
	m := &a.mw
	var recall *memory.Recaller
	var recallDone func(int)
	if o.Memory != nil && o.Memory.Recall != nil {
		recall = &memory.Recaller{Dir: o.Memory.Dir, Model: o.Memory.Recall, ModelName: o.Memory.RecallModel, Now: o.Now, Warn: o.Warn}
		recallDone = o.Memory.RecallDone
	}
	var entries []*transcript.Entry
	if conv != nil {
		entries = conv.Entries
	}
	m.context = sessionctx.New(sessionctx.Options{
		Instructions: o.Instructions, Recall: recall, RecallDone: recallDone, Tool: reg.Lookup, Now: o.Now, Warn: o.Warn,
	}, entries)
	m.budget = &budget.Budget{}
	m.provider = middleware.Providers(append([]middleware.Provider{m.context, m.budget}, o.Middleware.Providers...)...)
	var gates []middleware.Gate
	if o.Memory != nil {
		gates = append(gates, memory.WriteGate{Dir: o.Memory.Dir})
	}
	m.gate = middleware.Gates(append(gates, o.Middleware.Gate)...)
	var hooks middleware.StopHandler
	if o.Middleware.Stop != nil {
		hooks = a.flushedFirst(o.Middleware.Stop)
	}
	m.stop = middleware.Stops(hooks, m.budget)
	if o.Memory != nil && o.Memory.Extract {
		m.enders = append(m.enders, memory.NewExtractor(memory.ExtractConfig{
			Dir: o.Memory.Dir, Model: o.Model, ModelName: o.ModelName, MaxTokens: o.MaxTokens, Tools: reg,
			Every: o.Memory.ExtractEvery, Now: o.Now, Warn: o.Warn,
		}))
	}
	m.enders = append(m.enders, slices.DeleteFunc(slices.Clone(o.Middleware.Enders), func(e middleware.Ender) bool { return e == nil })...)
}

// closeMiddleware closes the session's middlewares, or, when the start
// failed before they were composed, the ones Options gave.
func (a *Agent) closeMiddleware() error {
	a.mwClosed = true
	if a.mw.provider == nil {
		return closeGiven(a.opts.Middleware)
	}
	errs := []error{a.mw.provider.Close()}
	for _, e := range a.mw.enders {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}

// closeGiven closes the providers and enders of m.
func closeGiven(m Middleware) error {
	var errs []error
	for _, p := range m.Providers {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	for _, e := range m.Enders {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(errs...)
}

// flushedFirst runs h once the transcript holds the reply that ends the
// turn: the Stop hooks may read it.
func (a *Agent) flushedFirst(h middleware.StopHandler) middleware.StopHandler {
	return middleware.StopFunc(func(ctx context.Context, res *engine.Result, again bool) string {
		if err := a.writer.Flush(ctx); err != nil && a.opts.Warn != nil {
			a.opts.Warn(fmt.Sprintf("the transcript is not written up to the end of the turn: %v", err))
		}
		return h.BeforeStop(ctx, res, again)
	})
}

// shapeResults follows next (the large-result offload) with the
// providers' Results.
func (a *Agent) shapeResults(next func(context.Context, []engine.Outcome) []engine.Outcome) func(context.Context, []engine.Outcome) []engine.Outcome {
	return func(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
		if next != nil {
			outcomes = next(ctx, outcomes)
		}
		return a.mw.provider.Results(ctx, outcomes)
	}
}

// afterTurn passes a turn's events on and, when the turn ends well,
// tells the enders (background memory extraction).
func (a *Agent) afterTurn(ctx context.Context, turnStart int, events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
	if len(a.mw.enders) == 0 {
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
		system, err := a.prompts.Build(ctx)
		if err != nil {
			return
		}
		t := middleware.Turn{System: system, History: a.engine.History(), Start: turnStart}
		for _, e := range a.mw.enders {
			e.TurnEnded(ctx, t)
		}
	}
}

// memorySection is the system prompt's memory section, nil without
// memory.
func (a *Agent) memorySection() func(context.Context) (string, error) {
	mem := a.opts.Memory
	if mem == nil {
		return nil
	}
	return func(context.Context) (string, error) { return memory.Prompt(mem.Dir), nil }
}

// records are the records of instruction files an attachment shows.
func records(files []instructions.File) []sessionctx.FileRecord { return sessionctx.Records(files) }

// compactGuidance is what the instruction files in force say about
// compaction ("# Compact instructions" sections): every summary request
// follows it, automatic or not.
func (a *Agent) compactGuidance() string {
	if a.opts.Instructions == nil {
		return ""
	}
	return instructions.CompactGuidance(a.opts.Instructions.Current())
}
