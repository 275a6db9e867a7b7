package longrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestWorkloadShapes checks the two workloads are what issue 12 asks for.
func TestWorkloadShapes(t *testing.T) {
	b := Basic(1)
	if b.Steps() != 160 || len(b.Facts) != 12 || len(b.Turns) != 1 {
		t.Errorf("basic: %d steps, %d facts, %d turns", b.Steps(), len(b.Facts), len(b.Turns))
	}
	for _, s := range b.Turns[0].Steps {
		if s.Bytes < 1_000 || s.Bytes > 101_000 {
			t.Errorf("basic: an output of %d bytes", s.Bytes)
		}
	}
	h := Hard(1)
	deep := 0
	for _, f := range h.Facts {
		if strings.HasPrefix(f.Where, "step ") && strings.Contains(f.Where, "read, ") {
			for _, tu := range h.Turns {
				for _, s := range tu.Steps {
					if s.Bytes >= 60_000 && strings.Contains(h.Files[s.Path], f.Line()) {
						deep++
					}
				}
			}
		}
	}
	if h.Steps() != 480 || len(h.Turns) != 4 || len(h.Facts) != 18 || h.OutputBytes()/4 < 2_000_000 || deep != 4 {
		t.Errorf("hard: %d steps, %d turns, %d facts (%d deep in large reads), %d tokens of output", h.Steps(), len(h.Turns), len(h.Facts), deep, h.OutputBytes()/4)
	}
	if !strings.Contains(h.Turns[2].Prompt, "Change of requirement") {
		t.Errorf("no follow-up changes a requirement: %q", h.Turns[2].Prompt)
	}
	for _, f := range b.Facts {
		if f.Where == "CLAUDE.md" && !strings.Contains(b.Files["CLAUDE.md"], f.Line()) {
			t.Errorf("%s is not in CLAUDE.md", f.Line())
		}
	}
}

// TestNotesOracle: a notes update is answered with one Edit that adds
// every fact line the request shows and the notes lack, then a closing
// answer once the Edit's result is back.
func TestNotesOracle(t *testing.T) {
	p := newPlayer(Basic(1), "/p")
	instr := "This message is not part of the conversation: cairn asks you to update the session notes.\nUpdate the notes file /n/summary.md so that it records the conversation above. <current-notes>\n# Key results\nFACT-A1B=amber-0001\n</current-notes>"
	msgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("go")}},
		{Role: model.RoleAssistant, Content: []model.Block{modeltest.ToolUse("toolu_step0001", "Bash", `{}`)}},
		{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock("toolu_step0001", "x\nFACT-A1B=amber-0001\nFACT-C2D=onyx-0002\n", false), model.TextBlock(instr)}},
	}
	body, _ := json.Marshal(map[string]any{"messages": msgs})
	r := &modeltest.Request{ID: "req_1", Body: body, Params: &modeltest.Params{Messages: msgs}, Seen: msgs}
	reply := p.notes(r)
	if len(reply.Content) != 1 || reply.Content[0].Type != model.BlockToolUse || reply.Content[0].Name != "Edit" {
		t.Fatalf("want one Edit, got %+v", reply.Content)
	}
	var in struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	if err := json.Unmarshal(reply.Content[0].Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.FilePath != "/n/summary.md" || in.OldString != "# Key results" || in.NewString != "# Key results\nFACT-C2D=onyx-0002" {
		t.Errorf("edit %+v: want the one new fact added under Key results", in)
	}
	done := append(msgs, model.Message{Role: model.RoleAssistant, Content: reply.Content},
		model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(reply.Content[0].ID, "ok", false)}})
	if r2 := p.notes(&modeltest.Request{ID: "req_2", Body: body, Params: &modeltest.Params{Messages: done}, Seen: done}); len(r2.Content) != 1 || r2.Content[0].Type != model.BlockText {
		t.Errorf("after the Edit: %+v, want a closing answer", r2.Content)
	}
}

// TestNotesOracleWorklog: with no fact to add, the note-taker still moves
// the Worklog on (an update that edits nothing captured nothing).
func TestNotesOracleWorklog(t *testing.T) {
	p := newPlayer(Basic(1), "/p")
	instr := "cairn asks you to update the session notes.\nUpdate the notes file /n/summary.md so that it records the conversation above. <current-notes>\n# Key results\nFACT-A1B=amber-0001\n# Worklog\n" + worklogAnchor + "\n</current-notes>"
	msgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("go")}},
		{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("Step 7."), modeltest.ToolUse("toolu_step0007", "Bash", `{}`)}},
		{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock("toolu_step0007", "x\nFACT-A1B=amber-0001\n", false), model.TextBlock(instr)}},
	}
	body, _ := json.Marshal(map[string]any{"messages": msgs})
	reply := p.notes(&modeltest.Request{ID: "req_1", Body: body, Params: &modeltest.Params{Messages: msgs}, Seen: msgs})
	if len(reply.Content) != 1 || reply.Content[0].Name != "Edit" {
		t.Fatalf("want one Edit, got %+v", reply.Content)
	}
	var in map[string]string
	_ = json.Unmarshal(reply.Content[0].Input, &in)
	if in["old_string"] != worklogAnchor || in["new_string"] != worklogAnchor+"\n- went through the outputs up to step 7" {
		t.Errorf("edit %q: want a Worklog line naming step 7", in)
	}
}
