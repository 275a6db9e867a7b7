package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// todoCount is a tool defined here and nowhere else that works on its
// session's todo list: it takes the list through tools.Bound, so the
// session needs no change to give it.
type todoCount struct{ list *tools.TodoList }

func (todoCount) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "TodoCount", Description: "counts the todos", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (todoCount) ReadOnly(json.RawMessage) bool        { return true }
func (todoCount) Destructive(json.RawMessage) bool     { return false }
func (todoCount) ConcurrencySafe(json.RawMessage) bool { return true }
func (todoCount) Bind(s *tools.Session) tool.Tool      { return todoCount{list: s.Todos} }
func (t todoCount) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	if t.list == nil {
		return tool.Errorf("not bound to a session"), nil
	}
	var open []string
	for _, td := range t.list.Todos() {
		open = append(open, td.Content)
	}
	return tool.Text("todos: " + strings.Join(open, ", ")), nil
}

// TestBoundTool: a tool of the test's own takes the session's todo list
// when the session starts, and sees what TodoWrite put in it.
func TestBoundTool(t *testing.T) {
	onStores(t, testBoundTool)
}

func testBoundTool(t *testing.T, k storeKind) {
	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "TodoWrite",
			`{"todos":[{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "TodoCount", `{}`)}},
		modeltest.Text("done"),
	)
	opts := agent.Options{Home: session.Home{Dir: t.TempDir()}, Cwd: t.TempDir(), Store: k.store(), ModelName: "claude-test", MaxTokens: 4000,
		Tools: append(tools.Core(), todoCount{}), Entrypoint: "sdk-cli", NewUUID: counter(), DisableSessionMemory: true}
	a := openOn(t, srv, opts, nil)
	runAll(t, a, "count them")
	if body := string(srv.Last().Body); !strings.Contains(body, "todos: Run the tests") {
		t.Errorf("the tool did not see the session's todo list; the last request:\n%s", body)
	}
}
