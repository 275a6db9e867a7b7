// Package middleware names the parts a session is built of around the
// engine's loop, each behind a small interface: a Gate decides whether a
// tool call runs, a Provider adds context to what the model reads, a
// StopHandler may keep a turn going when the model ends it, and an Ender
// hears that a turn ended. The agent composes the ones it is given into
// the engine's hook points (engine.Config) with Gates, Providers and
// Stops; an embedder uses cairn's own (the memory-write gate, the session
// context, the token budget, memory extraction, the hooks and
// permissions of package governance), replaces one, or adds its own.
package middleware

import (
	"context"
	"errors"
	"slices"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Gate decides whether a tool call may run (engine.Config.Gate).
//
// Check is asked once per call, before it runs, with the tool the call
// names; the engine runs some calls of one response in parallel, so
// Check must be safe for concurrent use. A verdict with Allow false
// refuses the call and its Reason is what the model reads; Input, when
// set, is the input the call runs with instead of the model's; Record is
// kept with the result in the transcript. ctx is the turn's: when it is
// cancelled the turn is being interrupted, and Check should return at
// once (the call does not run whatever it answers).
type Gate interface {
	Check(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict
}

// GateFunc is a function that is a Gate.
type GateFunc func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict

// Check implements Gate.
func (f GateFunc) Check(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	return f(ctx, t, call)
}

// Gates returns the gate that asks gs in order: the first refusal is its
// answer and the gates after it are not asked; an input a gate rewrote is
// the input the next gates see and the call runs with; when every gate
// allows, the answer is the last one's (with the rewritten input). Nil
// gates are left out; Gates of none returns nil, which the engine takes
// as allowing everything.
func Gates(gs ...Gate) Gate {
	gs = slices.DeleteFunc(slices.Clone(gs), func(g Gate) bool { return g == nil })
	switch len(gs) {
	case 0:
		return nil
	case 1:
		return gs[0]
	}
	return gateChain(gs)
}

type gateChain []Gate

func (c gateChain) Check(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
	var v engine.Verdict
	var input []byte
	for _, g := range c {
		v = g.Check(ctx, t, call)
		if !v.Allow {
			return v
		}
		if v.Input != nil {
			call.Input, input = v.Input, v.Input
		}
	}
	v.Input = input
	return v
}

// CheckFunc returns g's Check, nil when g is nil: the form
// engine.Config.Gate takes.
func CheckFunc(g Gate) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	if g == nil {
		return nil
	}
	return g.Check
}

// Provider adds context to what the model reads besides the user's words
// (instruction files, recalled memories, a token budget). Its methods
// are called on the session's goroutine, one at a time; background work
// a provider starts is its own and must be safe beside them.
type Provider interface {
	// Prompt returns the context that goes with the user's text, once per
	// turn, before anything of the turn is sent. It may start background
	// work for the turn (a recall) whose findings go with a later Results
	// or Prompt; cancelling ctx does not stop that work, Close does.
	Prompt(ctx context.Context, text string) []engine.Attachment
	// Results may change the results of one response's tool calls, in
	// call order, before the model reads them and they are recorded
	// (engine.Config.ShapeResults); it returns them, changed in place or
	// anew. It must not drop or reorder them.
	Results(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome
	// Close stops the provider's background work and waits for it: when
	// Close returns, no goroutine of the provider is running. Neither
	// Prompt nor Results is called after Close; a second Close returns nil.
	Close() error
}

// Providers returns the provider that asks ps in order: Prompt gives
// their attachments one after another; Results passes the outcomes
// through each in turn; Close closes them all, the last first, and
// returns the first error. Nil providers are left out.
func Providers(ps ...Provider) Provider {
	return providerChain(slices.DeleteFunc(slices.Clone(ps), func(p Provider) bool { return p == nil }))
}

type providerChain []Provider

func (c providerChain) Prompt(ctx context.Context, text string) []engine.Attachment {
	var out []engine.Attachment
	for _, p := range c {
		out = append(out, p.Prompt(ctx, text)...)
	}
	return out
}

func (c providerChain) Results(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
	for _, p := range c {
		outcomes = p.Results(ctx, outcomes)
	}
	return outcomes
}

func (c providerChain) Close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i].Close())
	}
	return errors.Join(errs...)
}

// StopHandler runs when the model ends its turn (engine.Config.BeforeStop,
// Stop hooks, a token budget not yet spent). BeforeStop returns "" to let
// the turn end, or the text sent to the model in the user's place, and the
// turn goes on; again is set when the turn already went on that way once.
// res is the turn so far, to read, not to change. It is called on the
// loop's goroutine, and not at all when ctx is cancelled.
type StopHandler interface {
	BeforeStop(ctx context.Context, res *engine.Result, again bool) string
}

// StopFunc is a function that is a StopHandler.
type StopFunc func(ctx context.Context, res *engine.Result, again bool) string

// BeforeStop implements StopHandler.
func (f StopFunc) BeforeStop(ctx context.Context, res *engine.Result, again bool) string {
	return f(ctx, res, again)
}

// Stops returns the handler that asks hs in order: the first that keeps
// the turn going is the answer and those after it are not asked. Nil
// handlers are left out; Stops of none returns nil.
func Stops(hs ...StopHandler) StopHandler {
	hs = slices.DeleteFunc(slices.Clone(hs), func(h StopHandler) bool { return h == nil })
	switch len(hs) {
	case 0:
		return nil
	case 1:
		return hs[0]
	}
	return stopChain(hs)
}

type stopChain []StopHandler

func (c stopChain) BeforeStop(ctx context.Context, res *engine.Result, again bool) string {
	for _, h := range c {
		if more := h.BeforeStop(ctx, res, again); more != "" {
			return more
		}
	}
	return ""
}

// BeforeStopFunc returns h's BeforeStop, nil when h is nil: the form
// engine.Config.BeforeStop takes.
func BeforeStopFunc(h StopHandler) func(context.Context, *engine.Result, bool) string {
	if h == nil {
		return nil
	}
	return h.BeforeStop
}

// Turn is a turn that ended well, as an Ender hears of it.
type Turn struct {
	// System is the system prompt the turn's requests carried.
	System []model.SystemBlock
	// History is the whole conversation after the turn, and Start the
	// index of the turn's first message in it.
	History []model.Message
	Start   int
}

// Ender hears that a turn ended well: its last event (engine.EventDone)
// was passed on, and the turn was not interrupted. TurnEnded is called on
// the session's goroutine and must return at once: work it starts (a
// memory extraction) runs in the background, bounded by Close, which
// waits for it. t's slices are the session's: an Ender that keeps them
// past its return copies them.
type Ender interface {
	TurnEnded(ctx context.Context, t Turn)
	Close() error
}
