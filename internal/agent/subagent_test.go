package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// taskRig is a session with the Task tool, its custom agents loaded from
// its home and project as the command line loads them.
type taskRig struct {
	srv      *modeltest.Server
	home     session.Home
	cwd      string
	store    transcript.Store // nil: the home's file store
	warnings []string
}

func newTaskRig(t *testing.T, k storeKind, cfg modeltest.Config) *taskRig {
	t.Helper()
	return &taskRig{srv: modeltest.Start(t, cfg), home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store()}
}

func (r *taskRig) open(t *testing.T, o func(*agent.Options)) *agent.Agent {
	t.Helper()
	defs, warnings := subagent.Load(subagent.Dirs(r.home.Dir, r.cwd)...)
	r.warnings = warnings
	opts := agent.Options{Home: r.home, Cwd: r.cwd, Store: r.store, ModelName: "claude-test", MaxTokens: 4000,
		Tools: append([]tool.Tool{tools.NewTask(defs)}, tools.Core()...), Entrypoint: "sdk-cli",
		NewUUID: counter(), DisableSessionMemory: true}
	return openOn(t, r.srv, opts, o)
}

func taskCall(id, kind, prompt string) model.Block {
	in, _ := json.Marshal(map[string]string{"description": "A short label", "prompt": prompt, "subagent_type": kind})
	return modeltest.ToolUse(id, "Task", string(in))
}

// isChild tells a subagent's request by its system prompt's note.
func isChild(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte("You are a subagent"))
}

// answered reports whether the request carries the result of call id.
func answered(r *modeltest.Request, id string) bool {
	return bytes.Contains(r.Body, []byte(`"tool_use_id":"`+id+`"`))
}

// task returns the first block of a request's first message: a
// subagent's task (the context attached to it follows).
func task(r *modeltest.Request) string {
	if r.Params == nil || len(r.Params.Messages) == 0 || len(r.Params.Messages[0].Content) == 0 {
		return ""
	}
	return r.Params.Messages[0].Content[0].Text
}

func childRequests(srv *modeltest.Server) []*modeltest.Request {
	var out []*modeltest.Request
	for _, r := range srv.Requests() {
		if isChild(r) {
			out = append(out, r)
		}
	}
	return out
}

// sidechains returns the names of the session's subagent transcripts
// in its store (agent-<id>).
func sidechains(t *testing.T, a *agent.Agent) []string {
	t.Helper()
	_, names := subagentLogs(t, a)
	return names
}

// checkSidechain reads a subagent's transcript, by its name in the
// store: every line a sidechain of the session with the name's agent id,
// no torn line, and a valid conversation on load. It returns the agent id
// and the conversation.
func checkSidechain(t *testing.T, a *agent.Agent, name string) (string, *transcript.Conversation) {
	t.Helper()
	id := strings.TrimPrefix(name, "agent-")
	logs, _ := subagentLogs(t, a)
	data := storedIn(t, logs, name)
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a whole line", name)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		e, err := transcript.DecodeEntry(line)
		if err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		if !e.IsSidechain || e.AgentID != id || e.SessionID != a.ID() {
			t.Errorf("%s line %d is not a sidechain of session %s by agent %s: %s", name, i+1, a.ID(), id, line)
		}
	}
	conv, err := transcript.Load(t.Context(), transcript.BytesSource(data), transcript.LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Warnings) != 0 || len(conv.Entries) == 0 {
		t.Errorf("%s loads with %d entries, warnings %v", name, len(conv.Entries), conv.Warnings)
	}
	return id, conv
}

// TestTaskRunsASubagent: the model calls Task; the subagent reads a file
// and reports; the report is the call's result. The subagent's lines are
// in their own sidechain transcript, which loads as a conversation; the
// session's transcript holds only the call and its result, and lists as
// the one session.
func TestTaskRunsASubagent(t *testing.T) {
	onStores(t, testTaskRunsASubagent)
}

func testTaskRunsASubagent(t *testing.T, k storeKind) {
	var file string
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r) && !answered(r, "toolu_read"):
			return modeltest.Reply{Content: []model.Block{readCall("toolu_read", file)}}
		case isChild(r):
			return modeltest.Text("REPORT: the file says HELLO-CONTENT.")
		case answered(r, "toolu_task"):
			return modeltest.Text("The subagent found it.")
		}
		return modeltest.Reply{Content: []model.Block{model.TextBlock("Delegating."), taskCall("toolu_task", "general-purpose", "CHILD-TASK: read hello.txt and report what it says")}}
	}})
	file = filepath.Join(r.cwd, "hello.txt")
	if err := os.WriteFile(file, []byte("HELLO-CONTENT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := r.open(t, nil)
	var progress []string
	var res *engine.Result
	for ev, err := range a.Run(t.Context(), "find out what hello.txt says") {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case engine.EventToolProgress:
			progress = append(progress, ev.Call.ID+": "+ev.Text)
		case engine.EventDone:
			res = ev.Done
		}
	}
	if res.Text != "The subagent found it." {
		t.Fatalf("the turn ended with %q", res.Text)
	}
	if len(progress) != 1 || !strings.HasPrefix(progress[0], "toolu_task: Read ") {
		t.Errorf("progress events %q, want the subagent's Read", progress)
	}

	// The subagent: a fresh conversation on its task, the session's tools
	// but Task, the session's system prompt with the subagent's note.
	kids := childRequests(r.srv)
	if len(kids) != 2 {
		t.Fatalf("%d subagent requests, want 2", len(kids))
	}
	parentTools := r.srv.Requests()[0].Params.ToolNames()
	for _, k := range kids {
		if got := task(k); !strings.HasPrefix(got, "CHILD-TASK") {
			t.Errorf("the subagent's conversation starts with %q", got)
		}
		want := slices.DeleteFunc(slices.Clone(parentTools), func(n string) bool {
			return n == "Task" || n == "Snip" || n == "EnterPlanMode" || n == "ExitPlanMode"
		})
		if diff := slices.Compare(k.Params.ToolNames(), want); diff != 0 {
			t.Errorf("subagent tools %v, want %v", k.Params.ToolNames(), want)
		}
	}
	if !slices.Contains(parentTools, "Task") || slices.Contains(kids[0].Params.ToolNames(), "Task") {
		t.Errorf("Task offered to the session: %v, to the subagent: %v", parentTools, kids[0].Params.ToolNames())
	}
	if !bytes.Contains(kids[1].Body, []byte(`1\tHELLO-CONTENT`)) {
		t.Error("the subagent did not get the file's content")
	}

	// The session reads the report and the usage line.
	last := r.srv.Last()
	if isChild(last) || !bytes.Contains(last.Body, []byte("REPORT: the file says HELLO-CONTENT.")) || !bytes.Contains(last.Body, []byte(`tool_uses: 1`)) {
		t.Errorf("the session's last request lacks the report:\n%s", last.Body)
	}

	// The sidechain transcript.
	files := sidechains(t, a)
	if len(files) != 1 {
		t.Fatalf("subagent transcripts %v, want one", files)
	}
	id, conv := checkSidechain(t, a, files[0])
	msgs := conv.Messages()
	if len(msgs) != 4 || !strings.HasPrefix(msgs[0].Text(), "CHILD-TASK") || msgs[3].Text() != "REPORT: the file says HELLO-CONTENT." {
		t.Errorf("the subagent's transcript loads as %d messages: %+v", len(msgs), msgs)
	}

	// The session's transcript: no sidechain line; the result records
	// the subagent.
	data := stored(t, a)
	if bytes.Contains(data, []byte(`"isSidechain":true`)) || !bytes.Contains(data, []byte("CHILD-TASK: read hello.txt")) {
		t.Errorf("the session's transcript holds sidechain lines, or lacks the call")
	}
	var detail struct {
		AgentID           string        `json:"agentId"`
		TotalToolUseCount int           `json:"totalToolUseCount"`
		TotalTokens       int64         `json:"totalTokens"`
		Content           []model.Block `json:"content"`
		Status            string        `json:"status"`
	}
	parentConv, err := a.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range parentConv.Entries {
		if len(e.ToolUseResult) > 0 {
			if err := json.Unmarshal(e.ToolUseResult, &detail); err != nil {
				t.Fatal(err)
			}
		}
	}
	if detail.AgentID != id || detail.TotalToolUseCount != 1 || detail.TotalTokens == 0 || detail.Status != "completed" ||
		len(detail.Content) != 1 || detail.Content[0].Text != "REPORT: the file says HELLO-CONTENT." {
		t.Errorf("toolUseResult %+v, want agent %s's report", detail, id)
	}
	if n := len(parentConv.Messages()); n != 4 {
		t.Errorf("the session loads as %d messages, want 4", n)
	}
	if stored, err := a.Store().Sessions(t.Context()); err != nil || len(stored) != 1 || stored[0].ID != a.ID() {
		t.Errorf("sessions in the store: %+v, %v", stored, err)
	}
	if k == onFile {
		// The command line's listing of the home, too.
		infos, err := session.List(t.Context(), r.home, session.ListOptions{Cwd: r.cwd})
		if err != nil || len(infos) != 1 || infos[0].SessionID != a.ID() {
			t.Errorf("sessions listed: %+v, %v", infos, err)
		}
	}
}

// TestTasksRunConcurrently: two Task calls of one response run at once —
// each subagent's first request waits until the other's has arrived —
// and each call gets its own subagent's report.
func TestTasksRunConcurrently(t *testing.T) {
	onStores(t, testTasksRunConcurrently)
}

func testTasksRunConcurrently(t *testing.T, k storeKind) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		if isChild(r) {
			name := strings.TrimPrefix(task(r), "WORK-")
			arrived.Done()
			select {
			case <-both:
				return modeltest.Text("ANSWER-" + name)
			case <-time.After(20 * time.Second):
				return modeltest.Text("ALONE-" + name)
			}
		}
		if answered(r, "toolu_a") {
			return modeltest.Text("both done")
		}
		return modeltest.Reply{Content: []model.Block{
			taskCall("toolu_a", "general-purpose", "WORK-ALPHA"),
			taskCall("toolu_b", "general-purpose", "WORK-BETA"),
		}}
	}})
	a := r.open(t, nil)
	if res := drain(t, a, "do two things"); res.Text != "both done" {
		t.Fatalf("the turn ended with %q", res.Text)
	}
	last := r.srv.Last().Params.Messages
	results := slices.DeleteFunc(slices.Clone(last[len(last)-1].Content), func(b model.Block) bool { return b.Type != model.BlockToolResult })
	if len(results) != 2 {
		t.Fatalf("the last message holds %d blocks, want 2 results: %+v", len(results), results)
	}
	for i, want := range []struct{ id, text string }{{"toolu_a", "ANSWER-ALPHA"}, {"toolu_b", "ANSWER-BETA"}} {
		if b := results[i]; b.ToolUseID != want.id || !bytes.Contains(b.Content, []byte(want.text)) {
			t.Errorf("result %d is %s %s, want %s with %s", i, b.ToolUseID, b.Content, want.id, want.text)
		}
	}
	files := sidechains(t, a)
	if len(files) != 2 {
		t.Fatalf("subagent transcripts %v, want two", files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		id, conv := checkSidechain(t, a, f)
		msgs := conv.Messages()
		name := strings.TrimPrefix(msgs[0].Content[0].Text, "WORK-")
		if len(msgs) != 2 {
			t.Fatalf("%s loads as %+v", f, msgs)
		}
		if seen[id] || len(msgs) != 2 || msgs[1].Text() != "ANSWER-"+name {
			t.Errorf("%s: %+v", f, msgs)
		}
		seen[id] = true
	}
}

// TestSubagentCannotCallTask: the subagent is not offered Task, and a
// call it makes anyway fails; no grandchild starts.
func TestSubagentCannotCallTask(t *testing.T) {
	onStores(t, testSubagentCannotCallTask)
}

func testSubagentCannotCallTask(t *testing.T, k storeKind) {
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r) && !answered(r, "toolu_nested"):
			return modeltest.Reply{Content: []model.Block{taskCall("toolu_nested", "general-purpose", "NESTED")}}
		case isChild(r):
			return modeltest.Text("could not nest")
		case answered(r, "toolu_task"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "try to nest")}}
	}})
	a := r.open(t, nil)
	drain(t, a, "go")
	kids := childRequests(r.srv)
	if len(kids) != 2 {
		t.Fatalf("%d subagent requests, want 2", len(kids))
	}
	for _, k := range kids {
		if slices.Contains(k.Params.ToolNames(), "Task") || task(k) == "NESTED" {
			t.Errorf("a subagent was offered Task, or a grandchild ran: %v %q", k.Params.ToolNames(), task(k))
		}
	}
	if !bytes.Contains(kids[1].Body, []byte("No such tool available: Task")) {
		t.Errorf("the nested call did not fail:\n%s", kids[1].Body)
	}
	if !bytes.Contains(r.srv.Last().Body, []byte("could not nest")) {
		t.Error("the session did not get the subagent's report")
	}
	if files := sidechains(t, a); len(files) != 1 {
		t.Errorf("subagent transcripts %v, want one", files)
	}
}

// TestCustomAgents: agents from the user's and the project's folders are
// offered in the Task tool's description; one with a tools list gets
// only those tools, and its file's body as instructions; an unknown
// subagent_type fails with the valid ones; a broken file is a warning.
func TestCustomAgents(t *testing.T) {
	onStores(t, testCustomAgents)
}

func testCustomAgents(t *testing.T, k storeKind) {
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r):
			return modeltest.Text("READER-REPORT")
		case answered(r, "toolu_reader"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{
			taskCall("toolu_unknown", "nope", "x"),
			taskCall("toolu_reader", "reader", "READ-TASK"),
		}}
	}})
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Claude Code writes descriptions with colons in them, unquoted.
	write(filepath.Join(r.cwd, ".claude", "agents", "reader.md"), "---\nname: reader\ndescription: Reads files: and reports what they say\ntools: Read, Grep\nmodel: inherit\n---\nREADER-PROMPT: only read.\n")
	write(filepath.Join(r.home.Dir, "agents", "lister.md"), "---\nname: lister\ndescription: Lists files\ntools:\n  - Glob\n---\nList.\n")
	write(filepath.Join(r.cwd, ".cairn", "agents", "broken.md"), "---\ndescription: no name\n---\nbody\n")
	a := r.open(t, nil)
	if len(r.warnings) != 1 || !strings.Contains(r.warnings[0], "broken.md") {
		t.Errorf("warnings %q, want one about broken.md", r.warnings)
	}
	drain(t, a, "read things")

	first := r.srv.Requests()[0]
	var desc string
	for _, s := range first.Params.Tools {
		if string(s["name"]) == `"Task"` {
			_ = json.Unmarshal(s["description"], &desc)
		}
	}
	for _, want := range []string{"- general-purpose: ", "- lister: Lists files (tools: Glob)", "- reader: Reads files: and reports what they say (tools: Read, Grep)"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Task's description lacks %q:\n%s", want, desc)
		}
	}
	kids := childRequests(r.srv)
	if len(kids) != 1 {
		t.Fatalf("%d subagent requests, want 1", len(kids))
	}
	got := kids[0].Params.ToolNames()
	slices.Sort(got)
	if !slices.Equal(got, []string{"Grep", "Read"}) {
		t.Errorf("the reader's tools are %v, want Grep and Read", got)
	}
	if !bytes.Contains(kids[0].Body, []byte("READER-PROMPT: only read.")) {
		t.Error("the reader's instructions are not in its system prompt")
	}
	last := string(r.srv.Last().Body)
	if !strings.Contains(last, `Agent type \"nope\" not found. Available agent types: general-purpose, lister, reader`) || !strings.Contains(last, "READER-REPORT") {
		t.Errorf("the session's last request:\n%s", last)
	}
}

// TestSubagentIsGated: the subagent's calls go through the session's
// permission gate; a refusal reaches the subagent, which reports it.
func TestSubagentIsGated(t *testing.T) {
	onStores(t, testSubagentIsGated)
}

func testSubagentIsGated(t *testing.T, k storeKind) {
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r) && !answered(r, "toolu_bash"):
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_bash", "Bash", `{"command":"touch made-by-child"}`)}}
		case isChild(r):
			return modeltest.Text("REPORT: I was not allowed to run the command.")
		case answered(r, "toolu_task"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "make a file")}}
	}})
	var mu sync.Mutex
	var asked []string
	a := r.open(t, func(o *agent.Options) {
		o.Middleware.Gate = middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
			mu.Lock()
			asked = append(asked, call.Name)
			mu.Unlock()
			if call.Name == "Bash" {
				return engine.Verdict{Reason: "BASH-DENIED by the session's rules"}
			}
			return engine.Verdict{Allow: true}
		})
	})
	drain(t, a, "go")
	if !slices.Equal(asked, []string{"Task", "Bash"}) {
		t.Errorf("the gate decided %v, want Task then the subagent's Bash", asked)
	}
	if _, err := os.Stat(filepath.Join(r.cwd, "made-by-child")); err == nil {
		t.Error("the refused command ran")
	}
	kids := childRequests(r.srv)
	if len(kids) != 2 || !bytes.Contains(kids[1].Body, []byte("BASH-DENIED by the session's rules")) {
		t.Fatalf("the refusal did not reach the subagent")
	}
	if !bytes.Contains(r.srv.Last().Body, []byte("REPORT: I was not allowed to run the command.")) {
		t.Error("the session did not get the subagent's report")
	}
}

// TestSubagentCancelled: cancelling the turn while the subagent waits for
// the model stops both; both transcripts stay valid, and the session
// goes on.
func TestSubagentCancelled(t *testing.T) {
	onStores(t, testSubagentCancelled)
}

func testSubagentCancelled(t *testing.T, k storeKind) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	childStarted := make(chan struct{})
	var once sync.Once
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r):
			once.Do(func() { close(childStarted) })
			return modeltest.Reply{Content: []model.Block{model.TextBlock(strings.Repeat("thinking aloud ", 50))}, Hold: hold, HoldAfter: 4}
		case bytes.Contains(r.Body, []byte("go on")):
			return modeltest.Text("resumed fine")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "a long job")}}
	}})
	a := r.open(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { <-childStarted; cancel() }()
	var runErr error
	for _, err := range a.Run(ctx, "start the long job") {
		if err != nil {
			runErr = err
		}
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "interrupted") {
		t.Fatalf("the turn ended with %v, want an interruption", runErr)
	}
	files := sidechains(t, a)
	if len(files) != 1 {
		t.Fatalf("subagent transcripts %v, want one", files)
	}
	id, conv := checkSidechain(t, a, files[0])
	if last := conv.Entries[len(conv.Entries)-1]; !strings.Contains(string(last.Message), engine.InterruptedText) {
		t.Errorf("the subagent's transcript ends with %s, want the interruption marker", last.Message)
	}
	if k == onFile {
		// The subagent's writer let its transcript go. (A store over
		// another store's files is exclusive only among its own handles:
		// a fresh one would take it anyway.)
		app, err := transcript.NewFileStore(filepath.Join(a.SessionDir(), agent.SubagentsDir)).OpenAppender(t.Context(), "agent-"+id)
		if err != nil {
			t.Fatalf("the subagent's transcript is still held: %v", err)
		}
		app.Close()
	}
	conv, err := a.Conversation(t.Context())
	if err != nil || len(conv.Warnings) != 0 {
		t.Fatalf("the session's transcript: %v %v", err, conv.Warnings)
	}
	data := stored(t, a)
	if !bytes.Contains(data, []byte(engine.InterruptedForToolText)) {
		t.Error("the Task call's result does not say it was interrupted")
	}
	if res := drain(t, a, "go on"); res.Text != "resumed fine" {
		t.Errorf("after the interruption the session answered %q", res.Text)
	}
}

// TestSubagentCompacts: a subagent whose work outgrows the context window
// compacts its own conversation, in its own transcript, and finishes.
func TestSubagentCompacts(t *testing.T) {
	onStores(t, testSubagentCompacts)
}

func testSubagentCompacts(t *testing.T, k storeKind) {
	var mu sync.Mutex
	steps := 0
	r := newTaskRig(t, k, modeltest.Config{ContextWindow: 40_000, Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case isSummaryRequest(r):
			return modeltest.Text("<summary>The subagent ran Big many times.</summary>")
		case isChild(r) && steps < 20:
			steps++
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_%d", steps), "Big", `{}`)}}
		case isChild(r):
			return modeltest.Text("REPORT: all done.")
		case answered(r, "toolu_task"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "run Big twenty times")}}
	}})
	a := r.open(t, func(o *agent.Options) {
		o.Window = tokens.Window{Size: 40_000, MaxOutput: 4_000}
		o.Tools = append(o.Tools, bigTool{n: 2000})
	})
	drain(t, a, "delegate the big job")
	for _, req := range r.srv.Requests() {
		if req.Status != 200 {
			t.Errorf("request %s answered %d: every request must fit", req.ID, req.Status)
		}
	}
	if !bytes.Contains(r.srv.Last().Body, []byte("REPORT: all done.")) {
		t.Fatal("the session did not get the subagent's report")
	}
	files := sidechains(t, a)
	if len(files) != 1 {
		t.Fatalf("subagent transcripts %v, want one", files)
	}
	_, conv := checkSidechain(t, a, files[0])
	logs, _ := subagentLogs(t, a)
	if !bytes.Contains(storedIn(t, logs, files[0]), []byte(`"subtype":"compact_boundary"`)) || !conv.Entries[0].IsCompactBoundary() {
		t.Errorf("the subagent's transcript has no compaction to load from")
	}
	if parent := stored(t, a); bytes.Contains(parent, []byte("compact_boundary")) {
		t.Error("the subagent's compaction went to the session's transcript")
	}
}

// TestSubagentMaxTurns: the session's turn limit holds a subagent too;
// one stopped by it says so in its result.
func TestSubagentMaxTurns(t *testing.T) {
	onStores(t, testSubagentMaxTurns)
}

func testSubagentMaxTurns(t *testing.T, k storeKind) {
	var mu sync.Mutex
	n := 0
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case isChild(r):
			n++
			return modeltest.Reply{Content: []model.Block{model.TextBlock(fmt.Sprintf("still going %d", n)), modeltest.ToolUse(fmt.Sprintf("toolu_g%d", n), "Glob", `{"pattern":"*.go"}`)}}
		case answered(r, "toolu_task"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "never stop")}}
	}})
	a := r.open(t, func(o *agent.Options) { o.MaxTurns = 3 })
	if res := drain(t, a, "go"); res.Text != "ok" {
		t.Fatalf("the turn ended with %q", res.Text)
	}
	if kids := childRequests(r.srv); len(kids) != 3 {
		t.Errorf("%d subagent requests, want 3", len(kids))
	}
	if last := r.srv.Last().Body; !bytes.Contains(last, []byte("stopped at the turn limit")) || !bytes.Contains(last, []byte("still going 3")) {
		t.Errorf("the result does not say the subagent was stopped:\n%s", last)
	}
}

// TestSubagentStopSeesTranscript: when the SubagentStop hook point runs,
// the subagent's final reply is already in its transcript, which the
// hooks get the path of (agent_transcript_path) on the file store; on a
// store that keeps no files the path is empty, and the transcript is in
// the store.
func TestSubagentStopSeesTranscript(t *testing.T) {
	onStores(t, testSubagentStopSeesTranscript)
}

func testSubagentStopSeesTranscript(t *testing.T, k storeKind) {
	r := newTaskRig(t, k, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case isChild(r):
			return modeltest.Text("FINAL-REPORT")
		case answered(r, "toolu_task"):
			return modeltest.Text("ok")
		}
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", "general-purpose", "report")}}
	}})
	var stops []bool // whether the transcript held the report, at each stop
	var a *agent.Agent
	a = r.open(t, func(o *agent.Options) {
		o.Middleware.SubagentStop = func(_ context.Context, s agent.Subagent, _ *engine.Result, _ bool) string {
			logs, _ := subagentLogs(t, a)
			data := storedIn(t, logs, "agent-"+s.ID)
			if k == onFile {
				onDisk, err := os.ReadFile(s.TranscriptPath)
				if err != nil || !bytes.Equal(onDisk, data) {
					t.Errorf("the hooks' agent_transcript_path %s does not hold the stored transcript (%v)", s.TranscriptPath, err)
				}
			} else if s.TranscriptPath != "" {
				t.Errorf("agent_transcript_path %q on a store that keeps no files", s.TranscriptPath)
			}
			stops = append(stops, bytes.Contains(data, []byte("FINAL-REPORT")))
			return ""
		}
	})
	drain(t, a, "go")
	if !slices.Equal(stops, []bool{true}) {
		t.Errorf("at each SubagentStop, the transcript held the final reply: %v, want [true]", stops)
	}
}
