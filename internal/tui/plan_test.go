package tui_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// TestPlanApproval: a plan presented with ExitPlanMode is put to the
// person with the plan itself and the modes to carry it out in; the
// choice comes back as the answer's mode, a refusal as its note.
func TestPlanApproval(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.asker = tui.NewAsker()
	answers := make(chan tui.Answer, 2)
	// The gate stands in for the session's plan modes, which put the plan
	// to the person through the same Asker.
	r.gate = func(ctx context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		if call.Name != "ExitPlanMode" {
			return engine.Verdict{Allow: true}
		}
		ans := r.asker.Ask(ctx, tui.Question{Tool: call.Name, Input: call.Input, Reason: "The plan is saved at /home/plans/calm-rowing-cedar.md."})
		answers <- ans
		return engine.Verdict{Reason: "reviewed"}
	}
	plan, _ := json.Marshal(map[string]string{"plan": "# Greeting\n\n1. Change `hello` to `bye` in hello.py.\n2. Run the script to check it."})
	r.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "ExitPlanMode", string(plan))}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "ExitPlanMode", string(plan))}},
		modeltest.Text("Revising."),
	)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("plan the change")
	d.press("enter")
	golden(t, "plan", d.waitFor("Would you like to carry out this plan?"))
	d.press("1")
	if ans := <-answers; !ans.Allow || ans.Mode != "acceptEdits" {
		t.Errorf("approving with auto-accepted edits answered %+v", ans)
	}
	f := d.waitFor("Would you like to carry out this plan?")
	if !strings.Contains(f, "Run the script to check it.") {
		t.Errorf("the plan is not shown:\n%s", f)
	}
	d.press("3")
	d.waitFor("tell cairn what to do instead")
	d.typeText("keep hello")
	d.press("enter")
	if ans := <-answers; ans.Allow || ans.Note != "keep hello" {
		t.Errorf("keeping on planning answered %+v", ans)
	}
	d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "Revising.") && !strings.Contains(f, "esc to interrupt")
	})
}
