package agent

import (
	"context"
	"encoding/json"
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
// custom-title line in the transcript, of which the newest wins, and an
// agent-name line beside it (Claude Code 2.1.332 writes both, each with
// the session's id and no chain fields).
func (a *Agent) Rename(ctx context.Context, title string) error {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return errors.New("give the session a name: /rename NAME")
	}
	prev := a.title
	a.title = title
	if err := a.writer.AppendDurable(ctx, a.titleEntries()...); err != nil {
		a.title = prev
		return fmt.Errorf("record the name: %w", err)
	}
	return nil
}

// titleEntries are the lines naming the session a.title: custom-title
// and agent-name.
func (a *Agent) titleEntries() []transcript.Entry {
	name, _ := json.Marshal(a.title)
	return []transcript.Entry{
		{Type: transcript.TypeCustomTitle, CustomTitle: a.title, SessionID: a.id},
		{Type: transcript.TypeAgentName, SessionID: a.id, Extra: map[string]json.RawMessage{"agentName": name}},
	}
}
