package tui_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tokens"
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

// TestSubagentCost: /cost adds up the subagents' requests too, each
// priced as the model it ran on (a custom agent's haiku here).
func TestSubagentCost(t *testing.T) {
	var file string
	r := newRig(t, modeltest.Config{Respond: func(req *modeltest.Request) modeltest.Reply {
		child := bytes.Contains(req.Body, []byte("You are a subagent"))
		switch {
		case child && !bytes.Contains(req.Body, []byte(`"tool_use_id":"toolu_read"`)):
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", `{"file_path":"`+file+`"}`)}}
		case child:
			return modeltest.Text("REPORT: it prints hello")
		case bytes.Contains(req.Body, []byte(`"tool_use_id":"toolu_task"`)):
			return modeltest.Text("It prints hello.")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task",
			`{"description":"Read hello.py","prompt":"Say what hello.py prints.","subagent_type":"scout"}`)}}
	}})
	file = filepath.Join(r.dir, "hello.py")
	m, err := anthropic.New(anthropic.Config{BaseURL: r.srv.URL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	agents := append(subagent.BuiltIn(), subagent.Definition{Name: "scout", Description: "Looks things up", Model: "haiku"})
	s, err := agent.Open(t.Context(), agent.Options{
		Home: r.home, Cwd: r.dir, Model: m, ModelName: "claude-sonnet-4-5", MaxTokens: 4000, Window: r.window,
		Tools: append([]tool.Tool{tools.NewTask(agents)}, tools.Core()...), Entrypoint: "cli", Now: clock, NewUUID: r.uuid,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := r.options(s)
	// A dollar a haiku response, a hundred a sonnet one: the total says
	// which model each response was priced as.
	opts.Cost = func(name string, _ model.Usage) float64 {
		if name == "claude-haiku-4-5" {
			return 1
		}
		return 100
	}
	d := start(t, opts)
	d.waitFor("to auto-compact")
	d.typeText("what does hello.py print?")
	d.press("enter")
	d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "It prints hello.") && !strings.Contains(f, "esc to interrupt")
	})
	var u model.Usage
	for _, req := range r.srv.Requests() {
		u = u.Plus(req.Usage)
	}
	if n := len(r.srv.Requests()); n != 4 {
		t.Fatalf("%d requests, want the session's 2 and the subagent's 2", n)
	}
	d.typeText("/cost")
	d.press("enter")
	f := d.waitFor("Total cost:")
	usage := fmt.Sprintf("%s input, %s output, %s cache read, %s cache write",
		tokens.Thousands(u.InputTokens), tokens.Thousands(u.OutputTokens), tokens.Thousands(u.CacheReadInputTokens), tokens.Thousands(u.CacheCreationInputTokens))
	if !strings.Contains(f, "$202.0000") || !strings.Contains(f, usage) {
		t.Errorf("/cost does not count the subagent's 2 haiku responses beside the session's 2 (want $202.0000 and %q):\n%s", usage, f)
	}
}
