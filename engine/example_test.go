package engine_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// clock is a tool that tells the time, always the same time.
type clock struct{}

func (clock) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Clock", Description: "tells the time", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (clock) ReadOnly(json.RawMessage) bool        { return true }
func (clock) Destructive(json.RawMessage) bool     { return false }
func (clock) ConcurrencySafe(json.RawMessage) bool { return true }
func (clock) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("09:00"), nil
}

// question is the user's message of the examples.
var question = engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("What time is it?")}}}

// newExampleSession is a session on a scripted model that calls Clock and
// then answers, recording its transcript in memory.
func newExampleSession() (*engine.Session, func()) {
	m := modeltest.NewScripted(
		modeltest.Call(model.TextBlock("Let me look."), modeltest.ToolUse("toolu_1", "Clock", `{}`)),
		modeltest.Say("It is nine o'clock."),
	)
	app, _ := transcript.NewMemStore().OpenAppender(context.Background(), "example")
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	rec := session.NewRecorder(w, session.RecorderOptions{Envelope: session.Envelope{SessionID: "example", CWD: "/proj"}})
	tools, _ := tool.NewRegistry(clock{})
	s := engine.New(engine.Config{Model: m, ModelName: "claude-test", MaxTokens: 1000, Tools: tools, Env: tool.NewEnv("/proj"), Recorder: rec}, nil)
	return s, func() { w.Close() }
}

// A turn is a sequence of events: the command line, the UI and the tests
// all read the same one.
func ExampleSession_Run() {
	s, done := newExampleSession()
	defer done()
	for ev, err := range s.Run(context.Background(), question) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case engine.EventToolCall:
			fmt.Println("call:", ev.Call.Name)
		case engine.EventToolResult:
			fmt.Println("result:", ev.Result.Content[0].Text)
		case engine.EventAssistant:
			fmt.Println("reply:", ev.Message.Text())
		case engine.EventDone:
			fmt.Println("done:", ev.Done.Stop, "after", ev.Done.Turns, "requests")
		}
	}
	// Output:
	// reply: Let me look.
	// call: Clock
	// result: 09:00
	// reply: It is nine o'clock.
	// done: end_turn after 2 requests
}

// A consumer may stop listening at any event: the turn is interrupted
// there, as if its context were cancelled, and the session can go on.
func ExampleSession_Run_break() {
	s, done := newExampleSession()
	defer done()
	for ev := range s.Run(context.Background(), question) {
		if ev.Type == engine.EventToolCall {
			break // the call does not run
		}
	}
	last := s.History()[len(s.History())-1]
	fmt.Println(last.Text())
	// Output:
	// [Request interrupted by user]
}
