package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// counterTool counts its calls in n: the session's own state, defined
// here and nowhere else. As SessionScoped it gives a subagent a counter of
// its own when mine is false, and no tool at all when it is set.
type counterTool struct {
	name string
	mine bool
	n    *atomic.Int64
}

func (c counterTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: c.name, Description: "counts", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (counterTool) ReadOnly(json.RawMessage) bool        { return true }
func (counterTool) Destructive(json.RawMessage) bool     { return false }
func (counterTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (c counterTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	c.n.Add(1)
	return tool.Text("counted"), nil
}
func (c counterTool) ForSubagent() tool.Tool {
	if c.mine {
		return nil
	}
	return counterTool{name: c.name, n: new(atomic.Int64)}
}

// TestSessionScopedTool: a tool defined outside cairn says what a
// subagent gets in its place (tool.SessionScoped), with no list of names
// in the agent: the session-only tool is not offered to the subagent;
// the one with a copy is, and the subagent's calls count on the copy,
// not on the session's state.
func TestSessionScopedTool(t *testing.T) {
	onStores(t, testSessionScopedTool)
}

func testSessionScopedTool(t *testing.T, k storeKind) {
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r) && !answered(r, "toolu_count"):
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_count", "Count", `{}`)}}
		case isChild(r):
			return modeltest.Text("counted once")
		case answered(r, "toolu_task"):
			return modeltest.Text("done")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "count once")}}
	}})
	var count, mine atomic.Int64
	a := r.open(t, func(o *agent.Options) {
		o.Tools = append(o.Tools, counterTool{name: "Count", n: &count}, counterTool{name: "Mine", mine: true, n: &mine})
	})
	drain(t, a, "go")
	parent := r.srv.Requests()[0].Params.ToolNames()
	if !slices.Contains(parent, "Count") || !slices.Contains(parent, "Mine") {
		t.Fatalf("the session is not offered its own tools: %v", parent)
	}
	kids := childRequests(r.srv)
	if len(kids) != 2 {
		t.Fatalf("%d subagent requests, want 2", len(kids))
	}
	got := kids[0].Params.ToolNames()
	if !slices.Contains(got, "Count") || slices.Contains(got, "Mine") || slices.Contains(got, "Task") {
		t.Errorf("the subagent is offered %v: want Count, and neither Mine nor Task", got)
	}
	if !answered(kids[1], "toolu_count") {
		t.Error("the subagent's Count call got no result")
	}
	if n := count.Load(); n != 0 {
		t.Errorf("the subagent's call counted %d on the session's counter, want 0 (it has a copy)", n)
	}
}
