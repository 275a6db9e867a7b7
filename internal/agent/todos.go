package agent

import (
	"context"

	"github.com/cairn-dev/cairn/engine"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/transcript"
)

// todosOf returns the todo list a resumed conversation left (SPEC R4) —
// the newest TodoWrite call's, or the one the last compaction carried —
// or an empty list for a new session.
func todosOf(conv *transcript.Conversation) *coretools.TodoList {
	if conv == nil {
		return coretools.NewTodoList(nil)
	}
	return coretools.NewTodoList(coretools.LatestTodos(conv.Entries))
}

// survivors joins what several parts of the session must carry through
// every compaction (compact.Config.Survivors), in order.
func survivors(parts ...func(context.Context) []engine.Attachment) func(context.Context) []engine.Attachment {
	return func(ctx context.Context) []engine.Attachment {
		var out []engine.Attachment
		for _, p := range parts {
			out = append(out, p(ctx)...)
		}
		return out
	}
}

// Todos returns the session's todo list, as TodoWrite last set it.
func (a *Agent) Todos() []coretools.Todo { return a.todos.Todos() }
