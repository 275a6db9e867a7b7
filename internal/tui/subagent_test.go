package tui_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// TestSubagentProgress: while a Task call's subagent works, the call
// shows the subagent's latest step; then its report.
func TestSubagentProgress(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	var file string
	r := newRig(t, modeltest.Config{Respond: func(req *modeltest.Request) modeltest.Reply {
		child := bytes.Contains(req.Body, []byte("You are a subagent"))
		switch {
		case child && !bytes.Contains(req.Body, []byte(`"tool_use_id":"toolu_read"`)):
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", `{"file_path":"`+file+`"}`)}}
		case child:
			return modeltest.Reply{Content: []model.Block{model.TextBlock("REPORT: it prints hello")}, Hold: release, HoldAfter: 1}
		case bytes.Contains(req.Body, []byte(`"tool_use_id":"toolu_task"`)):
			return modeltest.Text("It prints hello.")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task",
			`{"description":"Read hello.py","prompt":"Say what hello.py prints.","subagent_type":"general-purpose"}`)}}
	}})
	file = filepath.Join(r.dir, "hello.py")
	m, err := anthropic.New(anthropic.Config{BaseURL: r.srv.URL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := agent.Open(t.Context(), agent.Options{
		Home: r.home, Cwd: r.dir, Model: m, ModelName: "claude-sonnet-4-5", MaxTokens: 4000, Window: r.window,
		Tools: append([]tool.Tool{tools.NewTask(subagent.BuiltIn())}, tools.Core()...), Entrypoint: "cli", Now: clock, NewUUID: r.uuid,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("what does hello.py print?")
	d.press("enter")
	f := d.waitFor("⎿  Read {")
	if !strings.Contains(f, "Task(Read hello.py)") {
		t.Errorf("the Task call is not shown:\n%s", f)
	}
	free()
	d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "It prints hello.") && strings.Contains(f, "REPORT: it prints hello") && !strings.Contains(f, "esc to interrupt")
	})
}
