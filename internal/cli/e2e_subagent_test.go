package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/pricing"
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

// withAgent writes a custom agent's file into the project's
// .claude/agents folder.
func (p *project) withAgent(t *testing.T, name, text string) {
	t.Helper()
	dir := filepath.Join(p.dir, ".claude", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// childTask is the task a subagent's request works on: the first block
// of its first message ("" for the session's requests).
func childTask(r *modeltest.Request) string {
	if !bytes.Contains(r.Body, []byte("You are a subagent")) || r.Params == nil || len(r.Params.Messages) == 0 || len(r.Params.Messages[0].Content) == 0 {
		return ""
	}
	return r.Params.Messages[0].Content[0].Text
}

// twoTasks serves a session whose model starts two subagents in one
// response: TASK-A on the project's scout agent, which runs on haiku,
// and TASK-B on the general-purpose one, on the session's model. Each
// reads hello.py and reports; their first requests wait for each other,
// so the two are at work at the same time.
func twoTasks(t *testing.T, p *project) {
	t.Helper()
	p.withAgent(t, "scout", "---\nname: scout\ndescription: Looks things up\nmodel: haiku\n---\nBe quick.\n")
	file := filepath.Join(p.dir, "hello.py")
	var mu sync.Mutex
	arrived := 0
	both := make(chan struct{})
	meet := func() {
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(10 * time.Second): // the test fails below if they never met
		}
	}
	answered := func(r *modeltest.Request, id string) bool {
		return bytes.Contains(r.Body, []byte(`"tool_use_id":"`+id+`"`))
	}
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		task := childTask(r)
		if task != "" {
			x := strings.ToLower(task[5:6]) // TASK-A → a
			if !answered(r, "toolu_read_"+x) {
				meet()
				return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read_"+x, "Read", fmt.Sprintf(`{"file_path":%q}`, file))}}
			}
			return modeltest.Text("REPORT-" + strings.ToUpper(x) + ": hello.py prints hello.")
		}
		if answered(r, "toolu_task_a") && answered(r, "toolu_task_b") {
			return modeltest.Text("Both agents say it prints hello.")
		}
		return modeltest.Reply{Content: []model.Block{
			modeltest.ToolUse("toolu_task_a", "Task", `{"description":"Read it","prompt":"TASK-A: say what hello.py prints.","subagent_type":"scout"}`),
			modeltest.ToolUse("toolu_task_b", "Task", `{"description":"Read it too","prompt":"TASK-B: say what hello.py prints.","subagent_type":"general-purpose"}`),
		}}
	}})
}

// checkSpent compares a result's usage and total_cost_usd with what the
// server charged for every request it got, each priced as the model it
// was sent to.
func checkSpent(t *testing.T, p *project, res map[string]any) {
	t.Helper()
	var want model.Usage
	var cost, allSonnet float64
	models := map[string]int{}
	for _, r := range p.srv.Requests() {
		want = want.Plus(r.Usage)
		cost += pricing.Cost(r.Params.Model, r.Usage)
		allSonnet += pricing.Cost("claude-sonnet-4-5", r.Usage)
		models[r.Params.Model]++
	}
	if models["claude-haiku-4-5"] != 2 || models["claude-sonnet-4-5"] != 4 {
		t.Errorf("requests by model %v, want the scout's 2 on haiku and 4 on the session's model", models)
	}
	raw, _ := json.Marshal(res["usage"])
	var got model.Usage
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got != want || want.OutputTokens == 0 {
		t.Errorf("usage %+v, want the sum of every request's %+v", got, want)
	}
	total, _ := res["total_cost_usd"].(float64)
	if math.Abs(total-cost) > 1e-12 || math.Abs(total-allSonnet) < 1e-9 {
		t.Errorf("total_cost_usd %v, want %v (%v if all were priced as sonnet)", total, cost, allSonnet)
	}
}

// TestPrintTaskSpending: the result's usage and total_cost_usd add up
// the subagents' requests too, each priced as its own model's.
func TestPrintTaskSpending(t *testing.T) {
	p := newProject(t)
	twoTasks(t, p)
	code, out, errOut := p.cairnQuiet(t, "-p", "what does hello.py print?", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if res["result"] != "Both agents say it prints hello." {
		t.Errorf("result %v", res["result"])
	}
	checkSpent(t, p, res)
}

// TestPrintTaskStreamJSON: stream-json prints each subagent's messages
// as they complete — its task, its replies, its tool results — tagged
// with its Task call's tool_use id, between the call and its result;
// the session's own messages have parent_tool_use_id null. Two
// subagents at work at once still give one whole JSON object a line.
func TestPrintTaskStreamJSON(t *testing.T) {
	p := newProject(t)
	twoTasks(t, p)
	code, out, errOut := p.cairnQuiet(t, "-p", "what does hello.py print?", "--output-format", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("the output does not end with a whole line:\n%s", out)
	}
	// shape names a message's blocks: text by its first word, tool_use
	// by its tool, tool_result as such.
	shape := func(m map[string]any) string {
		var s []string
		blocks, _ := m["message"].(map[string]any)["content"].([]any)
		for _, b := range blocks {
			b := b.(map[string]any)
			switch b["type"] {
			case "text":
				word, _, _ := strings.Cut(b["text"].(string), ":")
				s = append(s, word)
			case "tool_use":
				s = append(s, "use "+b["name"].(string))
			default:
				s = append(s, b["type"].(string))
			}
		}
		return m["type"].(string) + " " + strings.Join(s, ",")
	}
	var main []string
	children := map[string][]string{}
	first, last := map[string]int{}, map[string]int{}
	callAt, resultAt := -1, -1
	var res map[string]any
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i+1, err, l)
		}
		switch m["type"] {
		case "result":
			res = m
			continue
		case "assistant", "user":
		default:
			continue
		}
		parent, ok := m["parent_tool_use_id"]
		if !ok {
			t.Errorf("line %d has no parent_tool_use_id: %s", i+1, l)
		}
		if parent == nil {
			main = append(main, shape(m))
			switch shape(m) {
			case "assistant use Task,use Task":
				callAt = i
			case "user tool_result,tool_result":
				resultAt = i
			}
			continue
		}
		id := parent.(string)
		if _, ok := first[id]; !ok {
			first[id] = i
		}
		last[id] = i
		children[id] = append(children[id], shape(m))
		if m["session_id"] == nil || m["uuid"] == nil {
			t.Errorf("line %d lacks session_id or uuid: %s", i+1, l)
		}
	}
	wantMain := []string{"assistant use Task,use Task", "user tool_result,tool_result", "assistant Both agents say it prints hello."}
	if diff := cmp.Diff(wantMain, main); diff != "" {
		t.Errorf("the session's messages (-want +got):\n%s", diff)
	}
	for id, x := range map[string]string{"toolu_task_a": "A", "toolu_task_b": "B"} {
		want := []string{"user TASK-" + x, "assistant use Read", "user tool_result", "assistant REPORT-" + x}
		if diff := cmp.Diff(want, children[id]); diff != "" {
			t.Errorf("%s's messages (-want +got):\n%s", id, diff)
		}
		if first[id] < callAt || last[id] > resultAt {
			t.Errorf("%s's messages are at lines %d–%d, not between its call (%d) and its result (%d)", id, first[id]+1, last[id]+1, callAt+1, resultAt+1)
		}
	}
	if res == nil {
		t.Fatal("no result line")
	}
	checkSpent(t, p, res)
}

// TestSubagentStopEndsOnlyTheSubagent: a SubagentStop hook answering
// "continue": false lets the subagent end; the session goes on with its
// report, and what stderr says is that the subagent ended, not the run.
func TestSubagentStopEndsOnlyTheSubagent(t *testing.T) {
	p := newProject(t)
	p.withHooks(t, `{"SubagentStop": [{"hooks": [{"type": "command", "command": "$H/substop.sh"}]}]}`,
		map[string]string{"substop.sh": `cat >/dev/null; echo '{"continue": false, "stopReason": "ENOUGH"}'`})
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case childTask(r) != "":
			return modeltest.Text("REPORT: done.")
		case bytes.Contains(r.Body, []byte(`"tool_use_id":"toolu_task"`)):
			return modeltest.Text("The session went on.")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task",
			`{"description":"Do it","prompt":"DO: it.","subagent_type":"general-purpose"}`)}}
	}})
	code, out, errOut := p.cairnQuiet(t, "-p", "go", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["result"] != "The session went on." {
		t.Errorf("result %v (%v)", res["result"], err)
	}
	if !strings.Contains(errOut, "the SubagentStop:general-purpose hook ended the subagent: ENOUGH") || strings.Contains(errOut, "stopped the run") {
		t.Errorf("stderr does not say the hook ended the subagent alone:\n%s", errOut)
	}
}
