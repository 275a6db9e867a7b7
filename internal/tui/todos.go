package tui

import (
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
)

// todoTool is the tool whose calls show as a checklist.
const todoTool = "TodoWrite"

// maxPinnedTodos is how many items the list above the prompt shows.
const maxPinnedTodos = 8

// todosOf is the list a TodoWrite call sets, read from its input.
func todosOf(call model.Block) ([]tools.Todo, bool) {
	if call.Name != todoTool {
		return nil, false
	}
	var in struct {
		Todos []tools.Todo `json:"todos"`
	}
	if json.Unmarshal(call.Input, &in) != nil {
		return nil, false
	}
	return in.Todos, true
}

// open reports whether a list has work left: a list whose items are all
// done is over (the session empties it), and leaves the screen.
func openTodos(todos []tools.Todo) bool {
	for _, t := range todos {
		if t.Status != tools.TodoCompleted {
			return true
		}
	}
	return false
}

// todoLine is one item of the checklist: ☐ to do, ◼ under way (bold),
// ☑ done (dim, struck through).
func (r *renderer) todoLine(t tools.Todo, width int) string {
	switch t.Status {
	case tools.TodoCompleted:
		return r.st.dim.Strikethrough(true).Render(truncate("☑ "+t.Content, width))
	case tools.TodoInProgress:
		return r.st.bold.Render(truncate("◼ "+t.Content, width))
	}
	return truncate("☐ "+t.Content, width)
}

// todoCall renders a successful TodoWrite call: "Update Todos" and the
// checklist it set.
func (r *renderer) todoCall(todos []tools.Todo, width int) []string {
	out := []string{r.st.tool.Render("● ") + r.st.bold.Render("Update Todos")}
	if len(todos) == 0 {
		return append(out, r.st.dim.Render("  ⎿  (the list is empty)"))
	}
	for i, t := range todos {
		p := "     "
		if i == 0 {
			p = "  ⎿  "
		}
		out = append(out, r.st.dim.Render(p)+r.todoLine(t, width-5))
	}
	return out
}

// pinnedTodos is the list kept above the prompt while it has work left.
func (m *Model) pinnedTodos() []string {
	if !openTodos(m.todos) {
		return nil
	}
	out := []string{m.r.st.dim.Render(truncate("  Todos", m.width))}
	shown := m.todos
	if len(shown) > maxPinnedTodos {
		shown = shown[:maxPinnedTodos]
	}
	for _, t := range shown {
		out = append(out, "  "+m.r.todoLine(t, m.width-2))
	}
	if n := len(m.todos) - len(shown); n > 0 {
		out = append(out, m.r.st.dim.Render(fmt.Sprintf("  … +%d more", n)))
	}
	return out
}
