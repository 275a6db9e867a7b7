package tui_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestTodoChecklist: a TodoWrite call shows as a checklist (not the text
// meant for the model), and the list stays above the prompt, changing
// with each call, until every item is done.
func TestTodoChecklist(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	write := func(id, a, b, c string) model.Block {
		return modeltest.ToolUse(id, "TodoWrite", `{"todos":[`+
			`{"content":"Read the parser","activeForm":"Reading the parser","status":"`+a+`"},`+
			`{"content":"Fix the off-by-one","activeForm":"Fixing the off-by-one","status":"`+b+`"},`+
			`{"content":"Run the tests","activeForm":"Running the tests","status":"`+c+`"}]}`)
	}
	r.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{model.TextBlock("Planning it."), write("toolu_1", "completed", "in_progress", "pending")}},
		modeltest.Text("Working through the list."),
		modeltest.Reply{Content: []model.Block{write("toolu_2", "completed", "completed", "in_progress")}},
		modeltest.Text("Almost there."),
		modeltest.Reply{Content: []model.Block{write("toolu_3", "completed", "completed", "completed")}},
		modeltest.Text("All done."),
	)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("fix the parser")
	d.press("enter")
	f := d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "Working through the list.") && !strings.Contains(f, "esc to interrupt")
	})
	golden(t, "todos", f)
	if strings.Contains(f, "Todos have been modified") {
		t.Errorf("the text meant for the model is shown:\n%s", f)
	}

	d.typeText("go on")
	d.press("enter")
	f = d.waitUntil("the second turn", func(f string) bool {
		return strings.Contains(f, "Almost there.") && !strings.Contains(f, "esc to interrupt")
	})
	pinned := pinnedList(f)
	if want := "Todos\n☑ Read the parser\n☑ Fix the off-by-one\n◼ Run the tests"; pinned != want {
		t.Errorf("the list above the prompt is\n%s\nwant\n%s\nframe:\n%s", pinned, want, f)
	}

	d.typeText("finish")
	d.press("enter")
	f = d.waitUntil("the third turn", func(f string) bool {
		return strings.Contains(f, "All done.") && !strings.Contains(f, "esc to interrupt")
	})
	if p := pinnedList(f); p != "" {
		t.Errorf("a finished list stays above the prompt:\n%s", f)
	}
}

// pinnedList is the todo list shown between the transcript and the
// prompt's top rule: the lines from "Todos" to the rule, trimmed.
func pinnedList(frame string) string {
	lines := strings.Split(frame, "\n")
	var out []string
	in := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "Todos":
			in, out = true, []string{l}
		case in && strings.HasPrefix(l, "───"):
			return strings.Join(out, "\n")
		case in:
			out = append(out, l)
		}
	}
	return ""
}
