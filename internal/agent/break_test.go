package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// touchTool writes a file named by its input: a side effect a test can
// look for.
type touchTool struct{ dir string }

func (touchTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Touch", Description: "creates a file", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (touchTool) ReadOnly(json.RawMessage) bool        { return false }
func (touchTool) Destructive(json.RawMessage) bool     { return false }
func (touchTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (t touchTool) Run(_ context.Context, _ *tool.Env, in json.RawMessage) (tool.Result, error) {
	var args struct{ Name string }
	json.Unmarshal(in, &args)
	return tool.Text("touched"), os.WriteFile(filepath.Join(t.dir, args.Name), nil, 0o644)
}

// TestRunBreakAtEveryEvent: the agent's turn (the engine's events passed
// through its after-turn step, with memory extraction on) stops where
// its consumer breaks: no event after the break, no tool call after it,
// and the agent takes its next turn.
func TestRunBreakAtEveryEvent(t *testing.T) {
	onStores(t, testRunBreakAtEveryEvent)
}

func testRunBreakAtEveryEvent(t *testing.T, k storeKind) {
	open := func(t *testing.T) (*agent.Agent, string) {
		marks := t.TempDir()
		m := &modeltest.Scripted{Answer: func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
			last := req.Messages[len(req.Messages)-1].Text()
			if n == 0 && last != "" {
				return []model.Block{model.TextBlock("Touching."), modeltest.ToolUse("t1", "Touch", `{"Name":"one"}`)}, nil
			}
			return []model.Block{model.TextBlock("done")}, nil
		}}
		a, err := agent.Open(t.Context(), agent.Options{Home: session.Home{Dir: t.TempDir()}, Cwd: t.TempDir(), Store: k.store(), Model: m, ModelName: "claude-test", MaxTokens: 4000,
			Tools: []tool.Tool{touchTool{marks}}, Entrypoint: "sdk-cli", DisableAutoCompact: true,
			Memory: &agent.MemoryOptions{Dir: t.TempDir(), Extract: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a, filepath.Join(marks, "one")
	}
	a, _ := open(t)
	var full []engine.Event
	for ev, err := range a.Run(t.Context(), "touch one") {
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, ev)
	}
	callAt := -1
	for i, e := range full {
		if e.Type == engine.EventToolCall {
			callAt = i
		}
	}
	if callAt < 0 {
		t.Fatal("the turn made no tool call")
	}
	for stopAt := range full {
		t.Run(fmt.Sprint(stopAt), func(t *testing.T) {
			a, mark := open(t)
			seen := 0
			for _, err := range a.Run(t.Context(), "touch one") {
				if err != nil {
					t.Fatal(err)
				}
				if seen++; seen > stopAt {
					break
				}
			}
			_, err := os.Stat(mark)
			if touched := err == nil; touched != (stopAt > callAt) {
				t.Errorf("break after event %d (the call is event %d): the tool ran: %v", stopAt, callAt, touched)
			}
			var done bool
			for ev, err := range a.Run(t.Context(), "and now?") {
				if err != nil {
					t.Fatalf("the next turn: %v", err)
				}
				done = done || ev.Type == engine.EventDone
			}
			if !done {
				t.Error("the next turn did not end")
			}
		})
	}
}
