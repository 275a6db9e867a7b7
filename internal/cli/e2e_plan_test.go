package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

const greetingPlan = "# Change the greeting\n\n1. In hello.py, print `goodbye` instead of `hello`.\n2. Run it to check.\n"

func planCall(id string) modeltest.Reply {
	in, _ := json.Marshal(map[string]string{"plan": greetingPlan})
	return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, "ExitPlanMode", string(in))}}
}

// TestPlanModeHeadless: a run started in plan mode reads but does not
// edit, and ends with the plan as its result, saved under
// $CAIRN_HOME/plans; the person approves it by continuing the session in
// acceptEdits mode, and the plan survives a compaction on the way.
func TestPlanModeHeadless(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	edit := fmt.Sprintf(`{"file_path":%q,"old_string":"hello","new_string":"goodbye"}`, file)
	p.srv.Enqueue(
		// A long answer first, for the /compact below to free room.
		modeltest.Reply{Content: []model.Block{model.TextBlock(longAnswer), modeltest.ToolUse("toolu_read", "Read", fmt.Sprintf(`{"file_path":%q}`, file))}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_early", "Edit", edit)}},
		planCall("toolu_plan"),
	)
	code, out, errOut := p.cairnQuiet(t, "-p", "plan the greeting change", "--permission-mode", "plan", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %q", out)
	}
	if res["result"] != greetingPlan || res["subtype"] != "success" || res["is_error"] != false {
		t.Errorf("result %v, want the plan", res)
	}
	reqs := p.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3: the plan ends the run", len(reqs))
	}
	if b, _ := os.ReadFile(file); string(b) != "print('hello')\n" {
		t.Errorf("plan mode let the file change: %q", b)
	}
	if body := string(reqs[2].Body); !strings.Contains(body, "plan mode") || !strings.Contains(body, "toolu_early") || !strings.Contains(body, `"is_error":true`) {
		t.Errorf("the edit in plan mode was not refused: %s", body)
	}
	plans, _ := filepath.Glob(filepath.Join(p.home, "plans", "*.md"))
	if len(plans) != 1 {
		t.Fatalf("plan files %q, want one", plans)
	}
	if b, _ := os.ReadFile(plans[0]); string(b) != greetingPlan {
		t.Errorf("plan file %q", b)
	}
	if body := string(reqs[0].Body); !strings.Contains(body, "Plan mode is on") || !strings.Contains(body, plans[0]) {
		t.Errorf("the prompt does not tell the model it is in plan mode: %s", body)
	}

	// A compaction between the plan and its approval keeps the plan.
	p.srv.Enqueue(modeltest.Text("<summary>The user asked for a plan to change the greeting; it was presented.</summary>"))
	if code, out, errOut := p.cairnQuiet(t, "-c", "-p", "/compact"); code != 0 {
		t.Fatalf("/compact: exit %d: %s\n%s", code, errOut, out)
	}

	// Approved by continuing in acceptEdits mode: the edit runs now.
	read := modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read2", "Read", fmt.Sprintf(`{"file_path":%q}`, file))}}
	p.srv.Enqueue(
		read,
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_edit", "Edit", edit)}},
		modeltest.Text("Done: it says goodbye."),
	)
	code, out, errOut = p.cairnQuiet(t, "-c", "-p", "go ahead", "--permission-mode", "acceptEdits")
	if code != 0 || out != "Done: it says goodbye.\n" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "print('goodbye')\n" {
		t.Errorf("hello.py = %q after the approval", b)
	}
	reqs = p.srv.Requests()
	approve := string(reqs[len(reqs)-3].Body)
	if !strings.Contains(approve, "A plan file exists from plan mode at: "+plans[0]) || !strings.Contains(approve, "2. Run it to check.") {
		t.Errorf("the plan did not survive the compaction: %s", approve)
	}
	if strings.Contains(approve, "Plan mode is on") {
		t.Error("the approving run still tells the model it is in plan mode")
	}
}

// TestEnterPlanModeHeadless: a run in acceptEdits mode that enters plan
// mode itself is refused edits until it presents a plan, which its mode
// approves at once; then the edit runs.
func TestEnterPlanModeHeadless(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	edit := fmt.Sprintf(`{"file_path":%q,"old_string":"hello","new_string":"goodbye"}`, file)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_enter", "EnterPlanMode", `{}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", fmt.Sprintf(`{"file_path":%q}`, file))}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_early", "Edit", edit)}},
		planCall("toolu_plan"),
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_edit", "Edit", edit)}},
		modeltest.Text("Changed."),
	)
	code, out, errOut := p.cairnQuiet(t, "-p", "change the greeting, carefully", "--permission-mode", "acceptEdits", "--output-format", "stream-json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	reqs := p.srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	results := map[string]string{}
	for _, m := range reqs[5].Params.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult {
				results[b.ToolUseID] = b.ResultText()
			}
		}
	}
	for id, want := range map[string]string{
		"toolu_enter": "in plan mode now",
		"toolu_early": "plan mode",
		"toolu_plan":  "approved the plan, and the session has left plan mode (it is in acceptEdits mode now)",
		"toolu_edit":  "updated",
	} {
		if !strings.Contains(results[id], want) {
			t.Errorf("%s answered %q, want it to say %q", id, results[id], want)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "print('goodbye')\n" {
		t.Errorf("hello.py = %q", b)
	}
}
