package tui_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestResumedResults draws the results of a resumed session, which are
// read from their blocks only when drawn: a result stored as a string, one
// stored as an array of blocks, and a failed one.
func TestResumedResults(t *testing.T) {
	call := func(id, cmd string) model.Block { return modeltest.ToolUse(id, "Bash", `{"command":"`+cmd+`"}`) }
	array := model.ToolResultBlock("toolu_b", "", false)
	array.Content = json.RawMessage(`[{"type":"text","text":"first part"},{"type":"text","text":"second part"}]`)
	h := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("run the checks")}},
		{Role: model.RoleAssistant, Content: []model.Block{call("toolu_a", "make lint"), call("toolu_b", "make test"), call("toolu_c", "make vet")}},
		{Role: model.RoleUser, Content: []model.Block{
			model.ToolResultBlock("toolu_a", "lint: clean\n", false),
			array,
			model.ToolResultBlock("toolu_c", "vet: 2 problems", true),
		}},
	}
	m := tui.New(tui.Options{Session: &staticSession{history: h}, Now: func() time.Time { return epoch }})
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	f := ansi.Strip(m.View().Content)
	for _, want := range []string{"⎿  lint: clean", "⎿  first part", "second part", "⎿  vet: 2 problems"} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
}

// TestResumedResultOfACutFile draws a resumed result that is a slice of
// its transcript's mapping, after the file was cut shorter: the result
// says so, and the UI goes on.
func TestResumedResultOfACutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	result := `"` + strings.Repeat("a line of output\n", 1000) + `"`
	if err := os.WriteFile(path, []byte(strings.Repeat(" ", 8192)+result), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filemap.Map(f, 0, int64(8192+len(result)))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	res := model.ToolResultBlock("toolu_a", "", false)
	res.Content = r.At(8192, len(result))
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	h := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("show the log")}},
		{Role: model.RoleAssistant, Content: []model.Block{modeltest.ToolUse("toolu_a", "Bash", `{"command":"cat log"}`)}},
		{Role: model.RoleUser, Content: []model.Block{res}},
		{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("The log is long.")}},
	}
	m := tui.New(tui.Options{Session: &staticSession{history: h}, Now: func() time.Time { return epoch }})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: height})
	f1 := ansi.Strip(m.View().Content)
	if !strings.Contains(f1, "could not be read") || !strings.Contains(f1, "The log is long.") {
		t.Errorf("the frame does not say the result could not be read, or stopped there:\n%s", f1)
	}
}
