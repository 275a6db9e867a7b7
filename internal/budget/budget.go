// Package budget keeps a turn to the token budget the user gave it
// (tokens.ParseBudget): the prompt carries a note of the
// budget, and when the model ends its turn before spending most of it, the
// turn goes on with a note of how much is spent. It is a middleware.Provider
// (the note) and a middleware.StopHandler (the continuation).
package budget

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Type is the attachment type of the budget's note.
const Type = "token_budget"

// Continuation bounds: the turn goes on until Done of the budget is spent,
// or a continuation produced less than MinProgress output tokens (the
// model had nothing more to do), or after MaxNudges continuations.
const (
	Done        = 0.9
	MinProgress = 500
	MaxNudges   = 100
)

// Budget is the token budget of the session's current turn. The zero
// value is ready to use; its methods are safe for concurrent use.
type Budget struct {
	mu  sync.Mutex
	cur *state // nil: the turn has no budget, or it is spent
}

// state is a turn's budget and how the turn is using it.
type state struct {
	target  int64
	nudges  int
	lastOut int64
}

// Prompt implements middleware.Provider: a budget the text gives is the
// turn's, stated in a note; a text without one ends the previous turn's.
func (b *Budget) Prompt(_ context.Context, text string) []engine.Attachment {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur = nil
	n, ok := tokens.ParseBudget(text)
	if !ok {
		return nil
	}
	b.cur = &state{target: n}
	note := fmt.Sprintf("The user gave this request a token budget of %s output tokens.", tokens.Thousands(n))
	return []engine.Attachment{{Type: Type, Data: map[string]any{"budget": n},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(note))}}}
}

// Results implements middleware.Provider: a budget adds nothing to tool
// results.
func (*Budget) Results(_ context.Context, outcomes []engine.Outcome) []engine.Outcome {
	return outcomes
}

// Close implements middleware.Provider: a budget runs nothing in the
// background.
func (*Budget) Close() error { return nil }

// BeforeStop implements middleware.StopHandler: while less than Done of
// the budget is spent and the last continuation made progress, the turn
// goes on.
func (b *Budget) BeforeStop(_ context.Context, res *engine.Result, _ bool) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.cur
	if s == nil {
		return ""
	}
	spent := res.Total.OutputTokens
	if float64(spent) >= Done*float64(s.target) || (s.nudges > 0 && spent-s.lastOut < MinProgress) || s.nudges >= MaxNudges {
		b.cur = nil
		return ""
	}
	s.nudges++
	s.lastOut = spent
	return fmt.Sprintf("Token budget: %s of %s output tokens spent (%d%%). Keep working on the request: check, extend and improve what you have done. If the work is truly complete, reply with a one-line summary and stop.",
		tokens.Thousands(spent), tokens.Thousands(s.target), spent*100/s.target)
}

var (
	_ middleware.Provider    = (*Budget)(nil)
	_ middleware.StopHandler = (*Budget)(nil)
)
