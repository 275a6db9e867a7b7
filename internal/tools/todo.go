package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Todo is one item of a session's todo list, as TodoWrite takes it.
type Todo struct {
	// Content says what to do, in the imperative ("Run the tests").
	Content string `json:"content"`
	// Status is TodoPending, TodoInProgress or TodoCompleted.
	Status string `json:"status"`
	// ActiveForm says it while it is being done ("Running the tests").
	ActiveForm string `json:"activeForm"`
}

// The statuses of a Todo.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// TodoAttachment is the type of the attachment that carries the todo list
// through a compaction, as Claude Code names it.
const TodoAttachment = "todo"

// TodoList is a session's todo list: what TodoWrite last set. A list whose
// items are all completed is done and becomes empty, as in Claude Code, so
// finished work is not carried on. The session holds it; it is not kept
// anywhere but in the transcript, from which LatestTodos restores it on
// resume (SPEC R4). Safe for concurrent use; the zero value is an empty
// list.
type TodoList struct {
	mu    sync.Mutex
	todos []Todo
}

// NewTodoList returns a list holding todos (a restored session's).
func NewTodoList(todos []Todo) *TodoList {
	l := &TodoList{}
	l.replace(todos)
	return l
}

// Todos returns the items, in order.
func (l *TodoList) Todos() []Todo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.todos)
}

// replace sets the items and returns the ones before.
func (l *TodoList) replace(todos []Todo) []Todo {
	if !slices.ContainsFunc(todos, func(t Todo) bool { return t.Status != TodoCompleted }) {
		todos = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.todos
	l.todos = slices.Clone(todos)
	return old
}

// todoReminder starts the text that shows the list to the model after a
// compaction.
const todoReminder = "This is your todo list as it stood when the conversation was compacted; the TodoWrite calls that built it were summarised away. It is still your current list: keep working through it and keep it up to date with TodoWrite. Do not mention this reminder to the user.\n\n"

// Survivors is a compact.Config.Survivors: the list, verbatim, as a
// reminder attachment, so that the model keeps its task state across a
// compaction and a resumed session finds the list after the boundary.
// An empty list adds nothing.
func (l *TodoList) Survivors(context.Context) []engine.Attachment {
	todos := l.Todos()
	if len(todos) == 0 {
		return nil
	}
	list, _ := jsonw.Marshal(todos) // plain strings always encode
	return []engine.Attachment{{
		Type:     TodoAttachment,
		Data:     map[string]any{"content": todos, "itemCount": len(todos), "context": "post-compact"},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(todoReminder + string(list)))},
	}}
}

// LatestTodos returns the todo list a conversation left (SPEC R4): the
// newest of the todo attachments a compaction recorded and the successful
// TodoWrite calls, reading entries (a loaded conversation's, oldest
// first) from the end. Calls whose answer (see answerOf) was an error are
// passed over, and so are inputs that are not a todo list. Transcripts of
// older Claude Code versions, whose items have no activeForm, restore
// too.
func LatestTodos(entries []*transcript.Entry) []Todo {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		switch e.Type {
		case transcript.TypeUser:
			continue // results are read from the calls they answer
		case transcript.TypeAttachment:
			if e.AttachmentType() != TodoAttachment {
				continue
			}
			var a struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(e.Attachment, &a) == nil && a.Type == TodoAttachment {
				if todos, ok := looseTodos(a.Content); ok {
					return todos
				}
			}
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		for j := len(m.Content) - 1; j >= 0; j-- {
			b := &m.Content[j] // not a copy: most blocks are not looked at
			if b.Type != model.BlockToolUse || b.Name != "TodoWrite" {
				continue
			}
			if _, r := answerOf(entries[i+1:], b.ID); r != nil && r.IsError != nil && *r.IsError {
				continue
			}
			var in struct {
				Todos json.RawMessage `json:"todos"`
			}
			if json.Unmarshal(b.Input, &in) != nil {
				continue
			}
			if todos, ok := looseTodos(in.Todos); ok {
				return todos
			}
		}
	}
	return nil
}

// looseTodos decodes a recorded list, ignoring fields it does not know.
func looseTodos(raw json.RawMessage) ([]Todo, bool) {
	var todos []Todo
	if json.Unmarshal(raw, &todos) != nil || todos == nil {
		return nil, false
	}
	for _, t := range todos {
		if strings.TrimSpace(t.Content) == "" || !validStatus(t.Status) {
			return nil, false
		}
	}
	return todos, true
}

func validStatus(s string) bool {
	return s == TodoPending || s == TodoInProgress || s == TodoCompleted
}

// TodoWrite replaces the session's todo list, which the model uses to plan
// and track multi-step work; the user sees it too.
//
// Safety: TodoWrite changes nothing outside the session — no file, no
// process, nothing on the network — so it answers ReadOnly true (it must
// work in plan mode and needs no permission) and Destructive false. It is
// not concurrency-safe: each call replaces the whole list and records the
// list it replaced, so two calls of one response must run in order.
//
// List is the session's list. Core gives each TodoWrite a list of its own;
// a session that restores or carries the list (internal/agent) gives it
// the one it holds. The zero value has no list and refuses to run.
type TodoWrite struct {
	List *TodoList
}

var todoWriteSchema = schema(`{
	"type": "object",
	"properties": {
		"todos": {
			"type": "array",
			"description": "The whole updated todo list, in order",
			"items": {
				"type": "object",
				"properties": {
					"content": {"type": "string", "minLength": 1, "description": "What to do, in the imperative: \"Run the tests\""},
					"status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
					"activeForm": {"type": "string", "minLength": 1, "description": "The same while it is being done: \"Running the tests\""}
				},
				"required": ["content", "status", "activeForm"],
				"additionalProperties": false
			}
		}
	},
	"required": ["todos"],
	"additionalProperties": false
}`)

// Spec describes TodoWrite to the model.
func (TodoWrite) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "TodoWrite",
		Description: `Writes your todo list for this session: a plan of the steps of the task and how far along each is. The user sees it, and it survives compaction of the conversation, so it is how you keep track of long work.

Use it when a task takes three or more distinct steps, when the user gives several things to do, or when new steps turn up as you work. Skip it for a single simple step or a question you can just answer.

- Each call sends the whole list; it replaces the previous one.
- Each item has content (imperative: "Fix the parser"), activeForm (the same while under way: "Fixing the parser") and status: pending, in_progress or completed.
- Keep exactly one item in_progress while you work (never more than one). Mark it in_progress before you start it, and completed as soon as it is done, before starting the next; do not batch updates.
- Mark an item completed only when it is fully done: tests failing, work left partial or errors unresolved mean it stays in_progress, and a blocker becomes a new item.
- Remove items that turned out not to be needed. When every item is completed the list is cleared.`,
		InputSchema: todoWriteSchema,
	}
}

// ReadOnly reports true: see the type's comment.
func (TodoWrite) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (TodoWrite) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false: see the type's comment.
func (TodoWrite) ConcurrencySafe(json.RawMessage) bool { return false }

// todoWriteDetail is TodoWrite's toolUseResult.
type todoWriteDetail struct {
	OldTodos []Todo `json:"oldTodos"`
	NewTodos []Todo `json:"newTodos"`
}

// todoWritten is what the model reads after a successful TodoWrite, in
// Claude Code's words.
const todoWritten = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable"

// errNoTodoList is returned by a TodoWrite that no session gave a list.
var errNoTodoList = errors.New("TodoWrite has no todo list: the session must give it one (TodoWrite{List: …})")

// Run replaces the list.
func (w TodoWrite) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("TodoWrite", input, "todos")
	items := a.list("todos", true)
	todos := []Todo{}
	for i, raw := range items {
		t, err := parseTodo(raw)
		if err != nil {
			a.err = fmt.Errorf("todos[%d]: %w", i, err)
			break
		}
		todos = append(todos, t)
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	if n := countStatus(todos, TodoInProgress); n > 1 {
		return failf("%d todos are in_progress; at most one may be. Keep the one you are working on in_progress and set the others to pending or completed", n), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	if w.List == nil {
		return tool.Result{}, errNoTodoList
	}
	old := w.List.replace(todos)
	if old == nil {
		old = []Todo{}
	}
	r := tool.Text(todoWritten)
	r.Detail = todoWriteDetail{OldTodos: old, NewTodos: todos}
	return r, nil
}

// parseTodo decodes and checks one item of TodoWrite's input.
func parseTodo(raw json.RawMessage) (Todo, error) {
	a := parseArgs("each todo", raw, "content", "status", "activeForm")
	t := Todo{Content: a.str("content", true), Status: a.str("status", true), ActiveForm: a.str("activeForm", true)}
	switch {
	case a.err != nil:
		return Todo{}, a.err
	case strings.TrimSpace(t.Content) == "":
		return Todo{}, errors.New(`"content" is empty; say what is to be done`)
	case strings.TrimSpace(t.ActiveForm) == "":
		return Todo{}, errors.New(`"activeForm" is empty; say what is being done, as in "Running the tests"`)
	case !validStatus(t.Status):
		return Todo{}, fmt.Errorf(`"status" must be "pending", "in_progress" or "completed", got %q`, t.Status)
	}
	return t, nil
}

func countStatus(todos []Todo, status string) int {
	n := 0
	for _, t := range todos {
		if t.Status == status {
			n++
		}
	}
	return n
}
