package cli_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// notesFile finds the notes file an update request names.
var notesFile = regexp.MustCompile(`Update the notes file (\S+) so that`)

// noteTaker answers the agent updating the session notes with an edit,
// and everything else with text.
func noteTaker(r *modeltest.Request) modeltest.Reply {
	m := notesFile.FindSubmatch(r.Body)
	if m == nil {
		return modeltest.Text("fine")
	}
	msgs := r.Params.Messages
	last := msgs[len(msgs)-1].Content
	if last[len(last)-1].Type == model.BlockToolResult {
		return modeltest.Text("Notes updated.")
	}
	const line = "_One terse line per step taken, oldest first_"
	in, _ := json.Marshal(map[string]string{"file_path": string(m[1]), "old_string": line, "new_string": line + "\n- THE-NOTE: answered the first question"})
	return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_n", "Edit", string(in))}}
}

func TestSummaryCommand(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: noteTaker})
	if code, _, e := p.cairn(t, "-p", "first question"); code != 0 {
		t.Fatal(e)
	}
	code, out, errOut := p.cairn(t, "-c", "-p", "/summary")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "# Session Title") || !strings.Contains(out, "- THE-NOTE: answered the first question") {
		t.Errorf("/summary printed:\n%s", out)
	}
	// The update read the conversation, which the session recorded.
	found := false
	for _, r := range p.srv.Requests() {
		if notesFile.Match(r.Body) && bytes.Contains(r.Body, []byte("first question")) {
			found = true
		}
	}
	if !found {
		t.Error("no update request carried the conversation")
	}
}
