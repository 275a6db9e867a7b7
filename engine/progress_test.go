package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// TestToolProgress: what running calls report becomes events between the
// calls' start and their results, each naming its call; a report made
// after its call ended is dropped, and does not block.
func TestToolProgress(t *testing.T) {
	late := make(chan func(), 1)
	step := func(ctx context.Context, input json.RawMessage) (tool.Result, error) {
		var in struct{ Name string }
		json.Unmarshal(input, &in)
		tool.ReportProgress(ctx, in.Name+" step 1")
		tool.ReportProgress(ctx, in.Name+" step 2")
		if in.Name == "b" {
			late <- func() { tool.ReportProgress(ctx, "too late") }
		}
		return tool.Text("done " + in.Name), nil
	}
	m := script(
		call(use("t1", "Step", `{"Name":"a"}`), use("t2", "Step", `{"Name":"b"}`)),
		say("finished"),
	)
	h := newHarness(t, m, []tool.Tool{&fakeTool{name: "Step", concurrent: true, run: step}}, nil)
	events, err := h.run(t, t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	(<-late)() // returns: no one listens any more
	var got []string
	for _, e := range events {
		switch e.Type {
		case engine.EventToolCall:
			got = append(got, "call "+e.Call.ID)
		case engine.EventToolProgress:
			got = append(got, e.Call.ID+": "+e.Text)
		case engine.EventToolResult:
			got = append(got, "result "+e.Call.ID)
		}
	}
	if len(got) != 8 {
		t.Fatalf("events %q, want 2 calls, 4 reports, 2 results", got)
	}
	// The two calls run at once: their reports interleave in any order,
	// each call's own in order.
	var t1, t2 []string
	for _, g := range got[2:6] {
		switch g[:2] {
		case "t1":
			t1 = append(t1, g)
		case "t2":
			t2 = append(t2, g)
		}
	}
	if diff := cmp.Diff([]string{"call t1", "call t2"}, got[:2]); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t1: a step 1", "t1: a step 2"}, t1); diff != "" {
		t.Errorf("t1's progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t2: b step 1", "t2: b step 2"}, t2); diff != "" {
		t.Errorf("t2's progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"result t1", "result t2"}, got[6:]); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestToolMessage: a message a running call reports (a subagent's reply,
// with its usage and model) becomes an EventToolMessage naming the call;
// a report with a line of text too gives the EventToolProgress after it.
func TestToolMessage(t *testing.T) {
	reply := &model.Response{Content: []model.Block{model.TextBlock("child says hi")}, Usage: model.Usage{InputTokens: 7, OutputTokens: 3}}
	msg := &model.Message{Role: model.RoleAssistant, Content: reply.Content}
	task := &model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("the task")}}
	child := func(ctx context.Context, input json.RawMessage) (tool.Result, error) {
		tool.Report(ctx, tool.Progress{Message: task})
		tool.Report(ctx, tool.Progress{Message: msg, Response: reply, Model: "claude-haiku-4-5", Text: "answered"})
		return tool.Text("done"), nil
	}
	m := script(
		call(use("t1", "Child", `{}`)),
		say("finished"),
	)
	h := newHarness(t, m, []tool.Tool{&fakeTool{name: "Child", run: child}}, nil)
	events, err := h.run(t, t.Context(), "go")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		switch e.Type {
		case engine.EventToolMessage:
			s := e.Call.ID + " message " + e.Message.Role + ": " + e.Message.Text()
			if e.Response != nil {
				s += fmt.Sprintf(" (%s, %d in)", e.Progress.Model, e.Response.Usage.InputTokens)
			}
			got = append(got, s)
		case engine.EventToolProgress:
			got = append(got, e.Call.ID+" progress: "+e.Text)
		}
	}
	want := []string{
		"t1 message user: the task",
		"t1 message assistant: child says hi (claude-haiku-4-5, 7 in)",
		"t1 progress: answered",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
