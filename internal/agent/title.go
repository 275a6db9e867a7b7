package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/transcript"
)

// SetModel makes the session's next requests go to the model called
// name (/model): the conversation, the tools and the transcript stay as
// they are; the replies' lines name the model that wrote them. Side
// requests made by the session (summaries, notes) keep the model the
// session was opened with. SetModel must not be called while a Run is in
// progress.
func (a *Agent) SetModel(name string) error {
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return fmt.Errorf("model %q: give one model name, as /model claude-sonnet-4-5", name)
	}
	a.opts.ModelName = name
	a.engine.SetModelName(name)
	return nil
}

// Title is the name the session was given (/rename), "" when none.
func (a *Agent) Title() string { return a.title }

// Rename names the session title, as Claude Code's /rename does: a
// custom-title line in the transcript, which the newest one wins.
func (a *Agent) Rename(ctx context.Context, title string) error {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return errors.New("give the session a name: /rename NAME")
	}
	prev := a.title
	a.title = title
	if err := a.writer.AppendDurable(ctx, a.titleEntry()); err != nil {
		a.title = prev
		return fmt.Errorf("record the name: %w", err)
	}
	return nil
}

// titleEntry is the custom-title line naming the session a.title.
func (a *Agent) titleEntry() transcript.Entry {
	return transcript.Entry{Type: transcript.TypeCustomTitle, CustomTitle: a.title, SessionID: a.id}
}
