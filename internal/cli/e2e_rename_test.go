package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestRenameAsClaudeCode: /rename writes the lines Claude Code 2.1.332
// writes for `/rename my title` (recorded from it in tmux): a
// custom-title line and an agent-name line, each holding only its type,
// the name and the session's id. `sessions list` and the resume picker
// show the name, and it is the session's name again after the resume.
func TestRenameAsClaudeCode(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("First answer."))
	x := p.openUI(t)
	x.send("hello")
	x.waitFor("First answer.")
	x.send("/rename my title")
	x.waitFor("Session renamed to my title.")
	id := p.sessionIDs(t)[0]

	// The shape Claude Code 2.1.332 writes, key for key.
	want := map[string][]string{
		"custom-title": {`"customTitle":"my title"`, `"sessionId":"` + id + `"`, `"type":"custom-title"`},
		"agent-name":   {`"agentName":"my title"`, `"sessionId":"` + id + `"`, `"type":"agent-name"`},
	}
	got := map[string][]string{}
	for _, l := range strings.Split(string(p.transcript(t)), "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		var typ string
		json.Unmarshal(m["type"], &typ)
		if _, ok := want[typ]; !ok {
			continue
		}
		var kv []string
		for k, v := range m {
			kv = append(kv, `"`+k+`":`+string(v))
		}
		slices.Sort(kv)
		got[typ] = kv
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the /rename lines (-Claude Code's shape +cairn's):\n%s", diff)
	}
	x.send("/exit")
	x.waitFor("cairn-exited-0")

	code, out, errOut := p.cairn(t, "sessions", "list")
	if code != 0 || !strings.Contains(out, "my title") {
		t.Errorf("sessions list: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}

	// The picker shows the name; after the resume /status names it.
	y := p.startUI(t, 100, 30, nil, "-r")
	s := y.waitFor("Resume a session")
	s = y.waitFor("my title")
	if strings.Contains(s, "❯ hello") {
		t.Errorf("the picker shows the first prompt, not the name:\n%s", s)
	}
	y.typeKeys("", "Enter")
	y.waitFor("First answer.")
	y.typeKeys("/status", "Enter")
	s = y.waitFor("Permission mode:")
	if !strings.Contains(s, "Name:              my title") || !strings.Contains(s, "Session:           "+id) {
		t.Errorf("/status after the resume does not name the session:\n%s", s)
	}
}
