package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

// slashTerms numbers the tmux servers of this file's tests.
var slashTerms atomic.Int64

// openUI starts `cairn args...` in the project in a tmux terminal
// 100×30 and waits for the welcome line.
func (p *project) openUI(t *testing.T, args ...string) tmux {
	t.Helper()
	proctest.Command(t, "tmux", "apt-get install tmux")
	x := tmux{t: t, name: fmt.Sprintf("cairn-slash-%d-%d", os.Getpid(), slashTerms.Add(1))}
	env := append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}, p.env...)
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q %s; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary, strings.Join(quoteAll(args), " "))
	x.run("new-session", "-d", "-s", x.name, "-x", "100", "-y", "30", script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })
	x.waitFor("/help for commands")
	return x
}

// send types text and presses Enter.
func (x tmux) send(text string) {
	x.t.Helper()
	x.run("send-keys", "-t", x.name, "-l", text)
	x.run("send-keys", "-t", x.name, "Enter")
}

// keys presses keys by tmux's names ("Escape", "C-c", "Tab").
func (x tmux) keys(keys ...string) {
	x.t.Helper()
	x.run(append([]string{"send-keys", "-t", x.name}, keys...)...)
}

// waitUntilGone waits until the terminal no longer shows text.
func (x tmux) waitUntilGone(text string) {
	x.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if !strings.Contains(x.screen(), text) {
			return
		}
		time.Sleep(100 * time.Millisecond) // a real terminal: nothing to wait on but the screen
	}
	x.t.Fatalf("the terminal still shows %q:\n%s", text, x.screen())
}

// messageRequests counts the conversation's requests to /v1/messages.
func messageRequests(srv *modeltest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Path == "/v1/messages" {
			n++
		}
	}
	return n
}

// TestDenyEndsTurn: refusing a call (Esc, or No without a note) ends the
// turn: the model is told the person refused, and no further request is
// made until the person types again. A refusal with a note goes on.
func TestDenyEndsTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"esc", []string{"Escape"}},
		{"no", []string{"3", "Enter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			p.srv.Enqueue(
				modeltest.Reply{Content: []model.Block{model.TextBlock("Let me run it."),
					modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo denied > out.txt"}`),
					modeltest.ToolUse("toolu_2", "Bash", `{"command":"echo second > two.txt"}`)}},
				modeltest.Text("NOT-SENT: the model was asked again."),
			)
			x := p.openUI(t)
			x.send("make out.txt")
			x.waitFor("Do you want to proceed?")
			x.keys(tc.keys...)
			x.waitFor("took the control back")
			if n := messageRequests(p.srv); n != 1 {
				t.Errorf("%d requests after the refusal, want 1", n)
			}
			if p.srv.Pending() != 1 {
				t.Errorf("the second reply was used: %d left", p.srv.Pending())
			}
			if _, err := os.Stat(p.dir + "/out.txt"); err == nil {
				t.Error("the refused command ran")
			}
			if _, err := os.Stat(p.dir + "/two.txt"); err == nil {
				t.Error("the call after the refused one ran")
			}
			// The person has the control back: the next prompt is the next request.
			x.send("do something else")
			s := x.waitFor("NOT-SENT")
			if strings.Contains(s, "Do you want to proceed?") {
				t.Errorf("asked again:\n%s", s)
			}
			req := p.srv.Last()
			var results []string
			for _, m := range req.Params.Messages {
				for _, b := range m.Content {
					if b.Type == model.BlockToolResult {
						results = append(results, string(b.Content))
					}
				}
			}
			if len(results) != 2 || !strings.Contains(results[0], "did not allow") || !strings.Contains(results[1], "did not run") {
				t.Errorf("the tool results sent: %q", results)
			}
		})
	}
	t.Run("note", func(t *testing.T) {
		p := newProject(t)
		p.srv.Enqueue(
			modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo denied > out.txt"}`)}},
			modeltest.Text("Understood, using printf."),
		)
		x := p.openUI(t)
		x.send("make out.txt")
		x.waitFor("Do you want to proceed?")
		x.keys("3")
		x.waitFor("tell cairn what to do instead")
		x.send("use printf instead")
		x.waitFor("Understood, using printf.")
		if got := lastToolResult(t, p.srv); !strings.Contains(got, "The user said: use printf instead") {
			t.Errorf("the note did not reach the model: %q", got)
		}
	})
}

// lastToolResult is the text of the last tool_result the model was sent.
func lastToolResult(t *testing.T, srv *modeltest.Server) string {
	t.Helper()
	req := srv.Last()
	if req == nil || req.Params == nil {
		t.Fatal("no request")
	}
	for i := len(req.Params.Messages) - 1; i >= 0; i-- {
		for _, b := range req.Params.Messages[i].Content {
			if b.Type == model.BlockToolResult {
				return string(b.Content)
			}
		}
	}
	t.Fatal("no tool_result in the last request")
	return ""
}

// TestCompactSmallSessionKeepsIt: /compact of a conversation smaller than
// its summary says so and leaves the session as it was — not a byte is
// written — headless and in the terminal UI.
func TestCompactSmallSessionKeepsIt(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		if strings.Contains(string(r.Body), "<summary></summary>") {
			return modeltest.Text("<summary>The user said hello; the assistant answered.</summary>")
		}
		return modeltest.Text("Hello there.")
	}})
	if code, _, e := p.cairn(t, "-p", "hello"); code != 0 {
		t.Fatal(e)
	}
	before := p.transcript(t)
	code, out, errOut := p.cairn(t, "-c", "-p", "/compact")
	if code != 0 || !strings.HasPrefix(out, "Not compacted: the conversation holds about") || !strings.Contains(out, "left as it was") {
		t.Errorf("headless /compact: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if after := p.transcript(t); string(after) != string(before) {
		t.Errorf("the transcript changed:\n%s", after[len(before):])
	}
	x := p.openUI(t, "-c")
	x.send("/compact")
	s := x.waitFor("Not compacted")
	if strings.Contains(s, "Conversation compacted") {
		t.Errorf("the UI reports a compaction:\n%s", s)
	}
	x.keys("C-c")
	x.keys("C-c")
	x.waitFor("cairn-exited-0")
	if after := p.transcript(t); string(after) != string(before) {
		t.Errorf("the transcript changed in the UI:\n%s", after[len(before):])
	}
}

// TestPinBareID: the bare id `sessions show` prints beside a message
// pins that message; a word that is no message's id, or any word in
// quotes, is pinned as written.
func TestPinBareID(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("The staging port is 8443."))
	if code, _, e := p.cairn(t, "-p", "which port does staging use?"); code != 0 {
		t.Fatal(e)
	}
	code, out, e := p.cairn(t, "sessions", "show", p.sessionIDs(t)[0])
	if code != 0 {
		t.Fatal(e)
	}
	var id string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "── assistant ── [id:"); ok {
			id = strings.TrimSuffix(rest, "]")
		}
	}
	if id == "" {
		t.Fatalf("sessions show prints no id for the answer:\n%s", out)
	}
	for _, tc := range []struct{ arg, want string }{
		{id, "Pinned message [id:" + id + "] for the rest of the session: The staging port is 8443."},
		{`"` + id + `"`, "Pinned for the rest of the session: " + id},
		{"3u4506", "Pinned for the rest of the session: 3u4506"},
	} {
		if id == "3u4506" {
			t.Skip("the answer's id is the word tested as a note")
		}
		code, out, e := p.cairn(t, "-c", "-p", "/pin "+tc.arg)
		if code != 0 || strings.TrimSpace(out) != tc.want {
			t.Errorf("/pin %s: exit %d, %q, %s; want %q", tc.arg, code, out, e, tc.want)
		}
	}
	if code, _, e := p.cairn(t, "-c", "-p", "/pin [id:zzzzzz]"); code == 0 || !strings.Contains(e, "no message") {
		t.Errorf("/pin of a tag that names no message: exit %d, %s", code, e)
	}
}

// TestOpenAIToolResultKeepsItsTag: with an OpenAI-compatible server, the
// [id:…] tag of a tool result goes in the tool message itself, not in a
// user message of its own.
func TestOpenAIToolResultKeepsItsTag(t *testing.T) {
	p := newProject(t)
	srv := openaitest.NewServer(t,
		openaitest.ToolCalls(openaitest.ToolCall{ID: "call_1", Name: "Read", Arguments: []string{fmt.Sprintf(`{"file_path":%q}`, p.dir+"/hello.py")}}),
		openaitest.Text("It prints hello."))
	cmd := exec.Command(binary, "-p", "read hello.py", "--model", "qwen2.5-coder")
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "OPENAI_BASE_URL=" + srv.URL, "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "It prints hello.") {
		t.Fatalf("%v: %s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	tool := -1
	for i, m := range body.Messages {
		if m.Role == "tool" {
			tool = i
		}
	}
	if tool < 0 {
		t.Fatalf("no tool message: %s", reqs[1].Body)
	}
	if c, _ := body.Messages[tool].Content.(string); !strings.Contains(c, "[id:") || !strings.Contains(c, "print('hello')") {
		t.Errorf("the tool message lacks its tag: %q", c)
	}
	if tool != len(body.Messages)-1 {
		t.Errorf("messages after the tool message: %+v", body.Messages[tool+1:])
	}
}

// TestSlashCommandsOfTheUI drives the slash commands Claude Code users
// type daily through the binary in a terminal: /model switches the next
// request's model, /rename writes a custom-title line, /add-dir lets the
// session work in another folder, /export writes the conversation, the
// reports say what is configured, /init has the model write CLAUDE.md,
// and /exit ends cairn.
func TestSlashCommandsOfTheUI(t *testing.T) {
	p := newProject(t)
	other := t.TempDir()
	os.WriteFile(other+"/notes.txt", []byte("OTHER-FOLDER-NOTES\n"), 0o644)
	os.MkdirAll(p.dir+"/.claude/agents", 0o755)
	os.WriteFile(p.dir+"/.claude/agents/reviewer.md", []byte("---\nname: reviewer\ndescription: Reviews diffs for bugs\n---\nReview.\n"), 0o644)
	p.withHooks(t, `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$H/pre"}]}]}`, map[string]string{"pre": "exit 0"})
	p.srv.Enqueue(modeltest.Text("First answer."))
	x := p.openUI(t)
	x.send("hello")
	x.waitFor("First answer.")

	// /model: the next request asks for the model named, the footer says it.
	x.send("/model claude-opus-4-1")
	x.waitFor("Model set to claude-opus-4-1")
	p.srv.Enqueue(modeltest.Text("Opus here."))
	x.send("who are you?")
	s := x.waitFor("Opus here.")
	if got := p.srv.Last().Params.Model; got != "claude-opus-4-1" {
		t.Errorf("the request after /model asked for %q", got)
	}
	if !strings.Contains(s, "claude-opus-4-1 · /help") {
		t.Errorf("the footer does not name the model:\n%s", s)
	}

	// /rename: a custom-title line, as Claude Code writes it.
	x.send("/rename  fix the  greeting ")
	x.waitFor("Session renamed to fix the greeting.")
	var title struct{ Type, CustomTitle, SessionID string }
	for _, l := range strings.Split(string(p.transcript(t)), "\n") {
		if strings.Contains(l, `"custom-title"`) {
			json.Unmarshal([]byte(l), &title)
		}
	}
	if title.Type != "custom-title" || title.CustomTitle != "fix the greeting" || title.SessionID != p.sessionIDs(t)[0] {
		t.Errorf("custom-title line: %+v", title)
	}

	// /status names the version, model, session, folder, API and settings.
	x.send("/status")
	s = x.waitFor("Permission mode:")
	for _, want := range []string{"Version:", "Model:             claude-opus-4-1", "Session:           " + p.sessionIDs(t)[0], "Name:              fix the greeting", "Folder:", "API:               anthropic at " + p.srv.URL, "Authentication:    ANTHROPIC_API_KEY", "Settings:"} {
		if !strings.Contains(s, want) {
			t.Errorf("/status lacks %q:\n%s", want, s)
		}
	}

	// /add-dir: a Read in the other folder no longer asks.
	x.send("/add-dir " + other)
	x.waitFor("to the folders this session may work in")
	x.send("/add-dir /no/such/folder")
	x.waitFor("no such directory")
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, other+"/notes.txt"))}}, modeltest.Text("Read the notes."))
	x.send("read the notes")
	s = x.waitFor("Read the notes.")
	if strings.Contains(s, "Do you want to proceed?") || !strings.Contains(lastToolResult(t, p.srv), "OTHER-FOLDER-NOTES") {
		t.Errorf("the Read in the added folder did not run:\n%s\n%s", s, lastToolResult(t, p.srv))
	}

	// /export FILE writes the conversation.
	x.send("/export convo.txt")
	x.waitFor("Conversation exported to")
	if b, err := os.ReadFile(p.dir + "/convo.txt"); err != nil || !strings.Contains(string(b), "who are you?") || !strings.Contains(string(b), "Opus here.") {
		t.Errorf("the export: %v\n%s", err, b)
	}

	// The reports.
	for _, c := range []struct{ cmd, want string }{
		{"/hooks", "PreToolUse"},
		{"/agents", "Reviews diffs for bugs"},
		{"/mcp", "No MCP servers are configured"},
		{"/doctor", "Home folder writable"},
	} {
		x.send("/clear-screen-marker-" + c.cmd[1:])
		x.waitFor("Unknown command /clear-screen-marker-" + c.cmd[1:])
		x.send(c.cmd)
		x.waitFor(c.want)
	}
	s = x.screen()
	if !strings.Contains(s, "✓ API reachable") || !strings.Contains(s, "✓ Settings files") {
		t.Errorf("/doctor:\n%s", s)
	}

	// /init asks the model to study the project and write CLAUDE.md.
	claudeMD := fmt.Sprintf(`{"file_path":%q,"content":"# Project\n\nRun python3 hello.py.\n"}`, p.dir+"/CLAUDE.md")
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_w", "Write", claudeMD)}}, modeltest.Text("CLAUDE.md written."))
	x.send("/init")
	x.waitFor("Do you want to proceed?")
	x.keys("1")
	x.waitFor("CLAUDE.md written.")
	if b, _ := os.ReadFile(p.dir + "/CLAUDE.md"); !strings.Contains(string(b), "Run python3 hello.py.") {
		t.Errorf("CLAUDE.md = %q", b)
	}
	var initPrompt string
	for _, r := range p.srv.Requests() {
		if r.Params != nil && strings.Contains(string(r.Body), "write a CLAUDE.md file") {
			initPrompt = string(r.Body)
			break
		}
	}
	if initPrompt == "" {
		t.Error("/init sent no prompt asking for CLAUDE.md")
	}

	x.send("/exit")
	x.waitFor("cairn-exited-0")

	// /quit too.
	y := p.openUI(t, "-c")
	y.send("/quit")
	y.waitFor("cairn-exited-0")
}

// TestEscEscRewindListsTypedPrompts: Esc twice on an empty prompt opens
// the rewind list, which holds only what the person typed: not the
// compaction's summary, not cairn's synthetic messages, not commands.
func TestEscEscRewindListsTypedPrompts(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: summarizer, DeltaBytes: 1 << 16})
	for _, args := range [][]string{{"-p", "first prompt"}, {"-c", "-p", "second prompt"}, {"-c", "-p", "/compact"}} {
		if code, _, e := p.cairn(t, args...); code != 0 {
			t.Fatalf("%q: %s", args, e)
		}
	}
	x := p.openUI(t, "-c")
	x.waitFor("compacted into a summary")
	x.keys("Escape")
	x.keys("Escape")
	x.waitFor("Nothing to rewind to yet")
	x.send("/cost")
	x.waitFor("Total cost:")
	x.send("third prompt")
	x.waitFor("More detail. More detail.")
	x.waitUntilGone("esc to interrupt")
	x.keys("Escape")
	x.keys("Escape")
	s := x.waitFor("pick the message to go back to before")
	var listed []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "❯")); l != "" && !strings.Contains(l, "Rewind") && !strings.Contains(l, "auto-compact") && !strings.Contains(l, "/help") {
			listed = append(listed, l)
		}
	}
	if strings.Join(listed, "|") != "third prompt" {
		t.Errorf("the rewind list holds %q, want only the prompt typed since the compaction:\n%s", listed, s)
	}
	x.keys("Escape")
}

// TestTabCompletion: in the terminal, Tab completes a slash command and
// a path after "@"; what .gitignore ignores is not offered.
func TestTabCompletion(t *testing.T) {
	p := newProject(t)
	os.Mkdir(p.dir+"/.git", 0o755)
	os.WriteFile(p.dir+"/.gitignore", []byte("secret-*\n"), 0o644)
	os.WriteFile(p.dir+"/secret-hello.txt", []byte("x\n"), 0o644)
	x := p.openUI(t)
	x.run("send-keys", "-t", x.name, "-l", "/ren")
	x.waitFor("/rename <name>")
	x.keys("Tab")
	x.waitFor("> /rename")
	x.keys("C-u")
	x.run("send-keys", "-t", x.name, "-l", "what does @")
	s := x.waitFor("@hello.py")
	if strings.Contains(s, "secret-hello") {
		t.Errorf("an ignored file is offered:\n%s", s)
	}
	x.run("send-keys", "-t", x.name, "-l", "he")
	x.keys("Tab")
	x.waitFor("> what does @hello.py")
}
