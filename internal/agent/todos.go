package agent

import (
	"context"

	"github.com/cairn-dev/cairn/engine"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/tool"
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

// withTodos gives the session's todo list to the TodoWrite tool among
// ts, in place of the list it came with, so that what the model writes is
// what the session carries through compaction and resume.
func withTodos(ts []tool.Tool, list *coretools.TodoList) {
	for i, t := range ts {
		if _, ok := t.(coretools.TodoWrite); ok {
			ts[i] = coretools.TodoWrite{List: list}
		}
	}
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
