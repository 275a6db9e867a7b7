package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// TestPrintTask: in a headless run in the default permission mode, the
// model hands a question to the project's custom agent with Task; the
// agent, offered only the tools its file names, reads a file and
// reports, and the model answers from the report. The agent's
// transcript is a sidechain in the session's subagents/ folder, which
// `cairn sessions list` does not list; a broken agent file is a warning;
// --verbose shows the agent's steps.
func TestPrintTask(t *testing.T) {
	p := newProject(t)
	file := filepath.Join(p.dir, "hello.py")
	child := func(r *modeltest.Request) bool { return bytes.Contains(r.Body, []byte("You are a subagent")) }
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		body := string(r.Body)
		switch {
		case child(r) && !strings.Contains(body, "toolu_read"):
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", fmt.Sprintf(`{"file_path":%q}`, file))}}
		case child(r):
			return modeltest.Text("REPORT: hello.py prints hello.")
		case strings.Contains(body, "toolu_task"):
			return modeltest.Text("It prints hello, says the reader.")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task",
			`{"description":"Read hello.py","prompt":"Read hello.py and say what it prints.","subagent_type":"reader"}`)}}
	}})
	agents := filepath.Join(p.dir, ".claude", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agents, "reader.md"), []byte("---\nname: reader\ndescription: Reads files and reports\ntools: Read\n---\nYou only read.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(agents, "broken.md"), []byte("---\nname: broken\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := p.cairnQuiet(t, "-p", "what does hello.py print?", "--output-format", "json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if res["result"] != "It prints hello, says the reader." || res["num_turns"].(float64) != 2 {
		t.Errorf("result %v", res)
	}
	if !strings.Contains(errOut, "warning: agent file "+filepath.Join(agents, "broken.md")) {
		t.Errorf("no warning about the broken agent file:\n%s", errOut)
	}
	// --verbose follows the subagent's steps.
	if !strings.Contains(errOut, "[Task …] Read {") {
		t.Errorf("stderr does not show the subagent's step:\n%s", errOut)
	}

	var kids []*modeltest.Request
	for _, r := range p.srv.Requests() {
		if child(r) {
			kids = append(kids, r)
		} else if !slices.Contains(r.Params.ToolNames(), "Task") {
			t.Errorf("the session is not offered Task: %v", r.Params.ToolNames())
		}
	}
	if len(kids) != 2 || !slices.Equal(kids[0].Params.ToolNames(), []string{"Read"}) || !bytes.Contains(kids[1].Body, []byte(`1\tprint('hello')`)) {
		t.Fatalf("%d subagent requests; the first offers %v", len(kids), kids[0].Params.ToolNames())
	}
	if !bytes.Contains(p.srv.Last().Body, []byte("REPORT: hello.py prints hello.")) {
		t.Error("the model did not get the report")
	}

	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v, %v", infos, err)
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(infos[0].Path), infos[0].SessionID, "subagents", "agent-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("subagent transcripts %v, want one", files)
	}
	src, err := transcript.OpenFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil || len(conv.Warnings) != 0 || len(conv.Messages()) != 4 {
		t.Fatalf("the subagent's transcript: %v, warnings %v", err, conv.Warnings)
	}
	for _, e := range conv.Entries {
		if !e.IsSidechain || e.AgentID == "" || e.SessionID != infos[0].SessionID {
			t.Errorf("not a sidechain line of the session: %+v", e)
		}
	}
	code, out, _ = p.cairnQuiet(t, "sessions", "list", "--json")
	if code != 0 || strings.Count(out, `"sessionId"`) != 1 {
		t.Errorf("sessions list: exit %d\n%s", code, out)
	}
}
