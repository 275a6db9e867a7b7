package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// What the terminal UI asks of a session besides running turns: the
// context meter's numbers and the in-session rewind. Like every method of
// Agent but Close, none may be called while a Run is in progress, except
// from inside the loop over a Run's events (the engine is paused then).

// Window is the context window the session measures itself against (a
// server's stated window, once it refused a request as too long).
func (a *Agent) Window() tokens.Window { return a.compact.Window() }

// Used is the context's size as the auto-compaction trigger compares it
// with its threshold (SPEC K1, less what snips and micro-compaction took
// off the last request, and no less than that request weighed as itself
// when that decided: see compact.Manager.Projected): the number the
// context meter shows, so the display and the trigger agree.
func (a *Agent) Used(ctx context.Context) (int64, error) {
	system, err := a.prompts.Build(ctx)
	if err != nil {
		return 0, err
	}
	return a.compact.Projected(a.engine.Used(system, a.tools.Specs())), nil
}

// RewindPlan says which files rewinding the code to before the prompt
// messageID would change, changing nothing.
func (a *Agent) RewindPlan(messageID string) (*filehistory.Plan, error) {
	return a.history.Plan(messageID)
}

// Rewind puts the files (code), the conversation, or both back to how
// they were when the prompt messageID was sent. Rewinding the
// conversation makes the next prompt continue from the message before
// it, on a new branch of the transcript; nothing is deleted. The plan of
// the files changed is returned when code is set.
func (a *Agent) Rewind(ctx context.Context, messageID string, code, conversation bool) (*filehistory.Plan, error) {
	var point *filehistory.Point
	if conversation {
		if err := a.writer.Flush(ctx); err != nil {
			return nil, err
		}
		src, err := a.store.OpenSource(ctx, a.id)
		if err != nil {
			return nil, err
		}
		point, err = filehistory.ConversationPoint(ctx, src, messageID)
		src.Close()
		// Back to before the first message is an empty conversation: the
		// next prompt starts a new chain in the same transcript.
		if err != nil && !(errors.Is(err, filehistory.ErrFirstMessage) && point != nil) {
			return nil, err
		}
	}
	var plan *filehistory.Plan
	if code {
		var err error
		if plan, err = a.history.Rewind(ctx, messageID, a.opts.NewUUID()); err != nil {
			return plan, fmt.Errorf("rewinding the files: %w", err)
		}
	}
	if point == nil {
		return plan, nil
	}
	h := a.engine.History()
	i := slices.IndexFunc(h, func(m model.Message) bool { return slices.Contains(m.IDs, messageID) })
	if i < 0 {
		return plan, fmt.Errorf("message %q is no longer in the conversation (a compaction summarised it); resume the session from before it with `cairn sessions rewind`", messageID)
	}
	if point.Leaf != "" {
		if err := a.recorder.Append(ctx, filehistory.LastPromptRecord(point, a.id)); err != nil {
			return plan, fmt.Errorf("rewinding the conversation: %w", err)
		}
	}
	a.recorder.SetLeaf(point.Leaf)
	a.engine.SetHistory(slices.Clone(h[:i]))
	// What the lighter layers did after the point is on the abandoned
	// branch: go on from what the new chain records, as a resume would.
	conv := &transcript.Conversation{} // back to the start: nothing done
	if point.Leaf != "" {
		var err error
		if conv, err = a.live(ctx); err != nil {
			return plan, fmt.Errorf("rewinding the conversation: %w", err)
		}
	}
	a.compact.Restore(conv)
	a.ext.relist(conv.Entries)
	return plan, nil
}
