package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// shell is a tool the model may call, which the example's gate refuses
// for one command.
type shell struct{}

func (shell) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Shell", Description: "runs a command", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (shell) ReadOnly(json.RawMessage) bool        { return false }
func (shell) Destructive(json.RawMessage) bool     { return true }
func (shell) ConcurrencySafe(json.RawMessage) bool { return false }
func (shell) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("ran"), nil
}

// An embedder composes its own middlewares into the engine's hook points:
// gates asked in order (the first refusal wins), and stop handlers that
// may keep the turn going.
func Example() {
	noRm := middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		var in struct{ Command string }
		json.Unmarshal(call.Input, &in)
		if in.Command == "rm -rf /" {
			return engine.Verdict{Reason: "not this command"}
		}
		return engine.Verdict{Allow: true}
	})
	logged := middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		fmt.Println("allowed:", string(call.Input))
		return engine.Verdict{Allow: true}
	})
	checked := false
	review := middleware.StopFunc(func(context.Context, *engine.Result, bool) string {
		if checked {
			return ""
		}
		checked = true
		return "Check your work once more."
	})

	m := modeltest.NewScripted(
		modeltest.Call(modeltest.ToolUse("t1", "Shell", `{"Command":"rm -rf /"}`), modeltest.ToolUse("t2", "Shell", `{"Command":"ls"}`)),
		modeltest.Say("Done."),
		modeltest.Say("Checked: done."),
	)
	app, _ := transcript.NewMemStore().OpenAppender(context.Background(), "example")
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	defer w.Close()
	rec := session.NewRecorder(w, session.RecorderOptions{Envelope: session.Envelope{SessionID: "example", CWD: "/proj"}})
	tools, _ := tool.NewRegistry(shell{})
	s := engine.New(engine.Config{
		Model: m, ModelName: "claude-test", MaxTokens: 1000, Tools: tools, Env: tool.NewEnv("/proj"), Recorder: rec,
		Gate:       middleware.CheckFunc(middleware.Gates(noRm, logged)),
		BeforeStop: middleware.BeforeStopFunc(middleware.Stops(review)),
	}, nil)
	in := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("Clean up.")}}}
	for ev, err := range s.Run(context.Background(), in) {
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case ev.Type == engine.EventToolResult:
			fmt.Println("result:", ev.Result.Content[0].Text)
		case ev.Type == engine.EventDone:
			fmt.Println("done:", ev.Done.Text)
		}
	}
	// Output:
	// result: not this command
	// allowed: {"Command":"ls"}
	// result: ran
	// done: Checked: done.
}
