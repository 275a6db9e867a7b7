package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// TestToolEndsTurn: a result with EndTurn ends the turn once the
// response's results are recorded, with no further request; the
// results are in the history and the transcript, so the next turn
// carries them.
func TestToolEndsTurn(t *testing.T) {
	present := &fakeTool{name: "Present", run: func(context.Context, json.RawMessage) (tool.Result, error) {
		r := tool.Text("presented; the run ends here")
		r.EndTurn = "THE PLAN"
		return r, nil
	}}
	echo := &fakeTool{name: "Echo", concurrent: true, run: func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Text("echoed"), nil
	}}
	m := script(
		call(use("t1", "Echo", `{}`), use("t2", "Present", `{}`)),
		say("next turn"),
	)
	h := newHarness(t, m, []tool.Tool{present, echo}, nil)
	events, err := h.run(t, t.Context(), "plan it")
	if err != nil {
		t.Fatal(err)
	}
	done := events[len(events)-1].Done
	if done == nil || done.Stop != engine.StopTool || done.Text != "THE PLAN" || done.Turns != 1 {
		t.Fatalf("turn ended with %+v", done)
	}
	if len(m.Requests()) != 1 {
		t.Fatalf("%d requests, want 1: the turn must end without another", len(m.Requests()))
	}
	// The results were recorded and the next turn sends them.
	if _, err := h.run(t, t.Context(), "go on"); err != nil {
		t.Fatal(err)
	}
	sent := m.Requests()[len(m.Requests())-1].Messages
	var texts []string
	for _, msg := range sent {
		for _, b := range msg.Content {
			if b.Type == model.BlockToolResult {
				texts = append(texts, b.ResultText())
			}
		}
	}
	if len(texts) != 2 || texts[1] != "presented; the run ends here" {
		t.Errorf("the next turn's request carries the results %q", texts)
	}
	// The transcript holds them too, for a resume.
	if got := encode(t, h.reload(t).Messages()); !strings.Contains(got, "presented; the run ends here") {
		t.Errorf("the transcript lacks the result: %s", got)
	}
}
