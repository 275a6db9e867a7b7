package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// put writes a file of the test, making its folders.
func put(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snipID is the message id cairn adds to a user message for Snip.
var snipID = regexp.MustCompile(`\n?\[id:[0-9a-z]+\]$`)

// userTexts are the text blocks of a request's last user message,
// without the message's Snip id.
func userTexts(r *modeltest.Request) []string {
	var all []string
	msgs := r.Params.Messages
	for _, b := range msgs[len(msgs)-1].Content {
		switch b.Type {
		case model.BlockText:
			all = append(all, b.Text)
		case model.BlockToolResult:
			var blocks []model.Block
			if err := json.Unmarshal(b.Content, &blocks); err != nil {
				all = append(all, b.ResultText())
			}
			for _, c := range blocks {
				all = append(all, c.Text)
			}
		}
	}
	var out []string
	for _, s := range all {
		if s = snipID.ReplaceAllString(s, ""); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func systemText(r *modeltest.Request) string {
	var b strings.Builder
	for _, s := range r.Params.System {
		b.WriteString(s.Text)
	}
	return b.String()
}

func hasText(texts []string, s string) bool {
	for _, t := range texts {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// A custom command typed as the prompt of a headless run is sent as
// Claude Code sends it: a block naming the command and its arguments,
// then its body with the arguments in place, the !`…` line's output
// inlined (allowed by the command's allowed-tools), and the @file as a
// Read of it.
func TestCustomCommandHeadless(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, "src/main.go"), "package main\n\nfunc main() {}\n")
	put(t, filepath.Join(p.dir, ".claude/commands/review.md"), "---\ndescription: Review a file for bugs\nargument-hint: <file>\nallowed-tools: Bash(echo:*)\n---\nReview $ARGUMENTS carefully; start with $0.\nHere is the file: @src/main.go and @missing.txt\nStatus: !`echo hello-from-bang`\n")
	p.srv.Enqueue(modeltest.Text("Reviewed."))
	code, out, errOut := p.cairn(t, "-p", "/review src/main.go")
	if code != 0 || out != "Reviewed.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, filepath.Join(p.dir, ".claude/commands/review.md")+": @missing.txt is not included") {
		t.Errorf("stderr has no warning about @missing.txt naming the file:\n%s", errOut)
	}
	texts := userTexts(p.srv.Last())
	want := []string{
		"<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>src/main.go</command-args>\n",
		"Review src/main.go carefully; start with src/main.go.\nHere is the file: @src/main.go and @missing.txt\nStatus: hello-from-bang\n",
	}
	var got []string
	for _, s := range texts {
		if !strings.HasPrefix(s, "<system-reminder>") {
			got = append(got, s)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the command's blocks (-want +got):\n%s", diff)
	}
	if !hasText(texts, `Called the Read tool with the following input: {"file_path":"`+filepath.Join(p.dir, "src/main.go")+`"}`) ||
		!hasText(texts, "Result of calling the Read tool:\n1\tpackage main\n2\t\n3\tfunc main() {}") {
		t.Errorf("the @src/main.go include is not sent as a Read of it:\n%s", strings.Join(texts, "\n---\n"))
	}
	// The model is offered the command by its description.
	if _, listed := listingsOf(p.srv.Last()); len(listed) != 1 || !strings.Contains(listed[0], "- review: Review a file for bugs") {
		t.Errorf("the command is not listed: %q", listed)
	}
}

// A !`…` line the rules do not allow stops the command: nothing runs,
// nothing is sent, and the error names the file and the line.
func TestCustomCommandDeniedShell(t *testing.T) {
	p := newProject(t)
	marker := filepath.Join(p.dir, "ran")
	put(t, filepath.Join(p.dir, ".claude/commands/bang.md"), "first !`touch "+marker+"` then !`echo ok`\n")
	code, _, errOut := p.cairn(t, "-p", "/bang")
	if code == 0 {
		t.Fatalf("exit 0, want a failure; stderr %q", errOut)
	}
	if !strings.Contains(errOut, filepath.Join(p.dir, ".claude/commands/bang.md")+": !`touch "+marker+"` did not run") {
		t.Errorf("stderr does not name the file and the line:\n%s", errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the denied command ran")
	}
	if n := len(p.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
	// The same line runs once a rule allows it.
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"permissions":{"allow":["Bash(touch:*)"]}}`)
	p.srv.Enqueue(modeltest.Text("Done."))
	if code, out, errOut := p.cairn(t, "-p", "/bang"); code != 0 || out != "Done.\n" {
		t.Fatalf("with the rule: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the allowed command did not run")
	}
}

// Skills: offered by name and description from the first request; the
// body arrives only when the model calls Skill, with the skill's folder
// named; the person typing /name loads it too; a subfolder command is
// /folder:name.
func TestSkills(t *testing.T) {
	p := newProject(t)
	skill := filepath.Join(p.dir, ".claude/skills/deploy-check")
	put(t, filepath.Join(skill, "SKILL.md"), "---\nname: deploy-check\ndescription: Checks that a deploy is safe. Use before deploying.\nallowed-tools: Read\n---\n# Deploy check\nRun the checks in checklist.md next to this file.\n")
	put(t, filepath.Join(skill, "checklist.md"), "- item one\n")
	put(t, filepath.Join(p.home, "skills/broken/SKILL.md"), "---\nname: [x\n---\nbody\n")
	put(t, filepath.Join(p.dir, ".claude/commands/git/log.md"), "---\ndescription: Show the log\n---\nShow the log of $ARGUMENTS\n")

	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Skill", `{"skill":"deploy-check"}`)}},
		modeltest.Text("Checked."),
	)
	code, out, errOut := p.cairn(t, "-p", "is the deploy safe?")
	if code != 0 || out != "Checked.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, filepath.Join(p.home, "skills/broken/SKILL.md")) {
		t.Errorf("no warning names the broken skill:\n%s", errOut)
	}
	reqs := p.srv.Requests()
	first, second := reqs[0], reqs[1]
	if _, listed := listingsOf(first); len(listed) != 1 || !strings.Contains(listed[0], "- deploy-check: Checks that a deploy is safe. Use before deploying.") || strings.Contains(listed[0], "Run the checks") {
		t.Errorf("the first request should list the skill, not its body: %q", listed)
	}
	if systemText(first) != systemText(second) {
		t.Error("the system prompt changed between requests: the cache breaks")
	}
	if !slicesContain(first.Params.ToolNames(), "Skill") {
		t.Errorf("tools %v have no Skill", first.Params.ToolNames())
	}
	want := []string{"Launching skill: deploy-check", "Base directory for this skill: " + skill + "\n\n# Deploy check\nRun the checks in checklist.md next to this file.\n"}
	if diff := cmp.Diff(want, userTexts(second)); diff != "" {
		t.Errorf("Skill result (-want +got):\n%s", diff)
	}

	// Typed by the person.
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "/deploy-check now please"); code != 0 {
		t.Fatalf("/deploy-check: exit %d: %s", code, errOut)
	}
	want = []string{
		"<command-message>deploy-check</command-message>\n<command-name>/deploy-check</command-name>\n<command-args>now please</command-args>\n",
		"Base directory for this skill: " + skill + "\n\n# Deploy check\nRun the checks in checklist.md next to this file.\n\n\nARGUMENTS: now please",
	}
	if diff := cmp.Diff(want, nonReminders(userTexts(p.srv.Last()))); diff != "" {
		t.Errorf("/deploy-check (-want +got):\n%s", diff)
	}
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "/git:log main"); code != 0 {
		t.Fatalf("/git:log: exit %d: %s", code, errOut)
	}
	if got := nonReminders(userTexts(p.srv.Last())); len(got) != 2 || got[1] != "Show the log of main\n" {
		t.Errorf("/git:log sent %q", got)
	}
}

func nonReminders(texts []string) []string {
	var out []string
	for _, s := range texts {
		if !strings.HasPrefix(s, "<system-reminder>") {
			out = append(out, s)
		}
	}
	return out
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The output style the settings name reaches the system prompt: a
// built-in one beside cairn's working rules, a file's own without them
// unless it keeps them; an unknown name is a warning.
func TestOutputStyles(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"outputStyle": "explanatory"}`)
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sys := systemText(p.srv.Last())
	if !strings.Contains(sys, "# Output style: explanatory") || !strings.Contains(sys, "# How to work") {
		t.Errorf("explanatory: system prompt lacks the style or the working rules:\n%s", sys)
	}

	put(t, filepath.Join(p.dir, ".claude/output-styles/pirate.md"), "---\nname: Pirate\ndescription: talks like a pirate\n---\nAnswer as a pirate would.\n")
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"outputStyle": "Pirate"}`)
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sys = systemText(p.srv.Last())
	if !strings.Contains(sys, "Answer as a pirate would.") || strings.Contains(sys, "# How to work") {
		t.Errorf("pirate: want the style without the working rules:\n%s", sys)
	}

	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"outputStyle": "nautical"}`)
	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "hi")
	if code != 0 || !strings.Contains(errOut, `outputStyle names "nautical"`) {
		t.Errorf("exit %d, stderr %q: want a warning about the unknown style", code, errOut)
	}
}

// cairn memory explain lists the commands, skills and styles, where each
// came from, and which won a name two share.
func TestMemoryExplainExtensions(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/commands/review.md"), "project review\n")
	put(t, filepath.Join(p.home, "commands/review.md"), "user review\n")
	put(t, filepath.Join(p.dir, ".cairn/skills/lint/SKILL.md"), "---\nname: lint\ndescription: lints\n---\nbody\n")
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"outputStyle": "learning"}`)
	code, out, errOut := p.cairn(t, "memory", "explain", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Extensions struct {
			Entries []struct {
				Kind, Name, Path, Scope, WonBy string
				Used                           bool
			}
			OutputStyle     string
			OutputStyleFrom string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	for _, e := range rep.Extensions.Entries {
		if e.Kind == "output style" {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s used=%v", e.Kind, e.Name, e.Scope, e.Used))
	}
	want := []string{"command review project (.claude) used=false", "command review user used=true", "skill lint project (.cairn) used=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if rep.Extensions.OutputStyle != "learning" || rep.Extensions.OutputStyleFrom != filepath.Join(p.dir, ".claude/settings.json") {
		t.Errorf("style %q from %q", rep.Extensions.OutputStyle, rep.Extensions.OutputStyleFrom)
	}
	_, text, _ := p.cairn(t, "memory", "explain")
	if !strings.Contains(text, "/review  "+filepath.Join(p.dir, ".claude/commands/review.md")+" [project (.claude)] — not used: "+filepath.Join(p.home, "commands/review.md")+" wins") {
		t.Errorf("text report:\n%s", text)
	}
}

// SessionEnd hooks run when a headless run ends (reason "other"), and
// `cairn hooks list` shows every hook with its event, matcher and file.
func TestSessionEndHookAndHooksList(t *testing.T) {
	p := newProject(t)
	out := filepath.Join(p.dir, "ended.json")
	settingsFile := filepath.Join(p.dir, ".claude/settings.json")
	put(t, settingsFile, `{"hooks": {
		"SessionEnd": [{"hooks": [{"type": "command", "command": "cat > `+out+`"}]}],
		"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "true", "timeout": 3}]}],
		"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "echo keep the API notes"}]}]
	}}`)
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the SessionEnd hook did not run: %v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in["hook_event_name"] != "SessionEnd" || in["reason"] != "other" || in["session_id"] == "" {
		t.Errorf("SessionEnd input %s", b)
	}

	code, js, errOut := p.cairn(t, "hooks", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Hooks []struct{ Event, Matcher, Command, File string }
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	var got []string
	for _, h := range rep.Hooks {
		got = append(got, h.Event+" ["+h.Matcher+"] "+h.Command+" "+filepath.Base(filepath.Dir(h.File)))
	}
	want := []string{"Notification [permission_prompt] true .claude", "PreCompact [manual] echo keep the API notes .claude", "SessionEnd [] cat > " + out + " .claude"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hooks list (-want +got):\n%s", diff)
	}
	if _, text, _ := p.cairn(t, "hooks", "list"); !strings.Contains(text, "Notification\n  [permission_prompt] true\n      from "+settingsFile+", timeout 3s") {
		t.Errorf("text listing:\n%s", text)
	}
}

// In the real terminal: the status line of the settings shows its
// command's first line; a custom command typed with its arguments and a
// skill typed as /name reach the model expanded; the session's end runs
// SessionEnd with reason prompt_input_exit.
func TestExtensionsInTerminalUI(t *testing.T) {
	proctest.Command(t, "tmux", "apt-get install tmux")
	p := newProject(t)
	ended := filepath.Join(p.dir, "ended.json")
	put(t, filepath.Join(p.dir, ".claude/commands/review.md"), "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $ARGUMENTS now.\n")
	put(t, filepath.Join(p.dir, ".claude/skills/deploy-check/SKILL.md"), "---\nname: deploy-check\ndescription: Checks a deploy\n---\nRun the deploy checks.\n")
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"statusLine": {"type": "command", "command": "printf 'SL:%s\n' \"$(cat | grep -o '\"model\":{\"id\":\"[^\"]*' | cut -d'\"' -f6)\""},
		"hooks": {"SessionEnd": [{"matcher": "prompt_input_exit", "hooks": [{"type": "command", "command": "cat > `+ended+`"}]}]}}`)
	p.srv.Enqueue(modeltest.Text("Reviewed it."), modeltest.Text("Deploy checked."))
	x := tmux{t: t, name: fmt.Sprintf("cairn-ext-%d", os.Getpid())}
	env := []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary)
	x.run("new-session", "-d", "-s", x.name, "-x", "100", "-y", "30", script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })

	x.waitFor("Welcome to cairn")
	x.waitFor("SL:claude-")
	x.run("send-keys", "-t", x.name, "-l", "/review hello.py")
	x.run("send-keys", "-t", x.name, "Enter")
	x.waitFor("Reviewed it.")
	if got := nonReminders(userTexts(p.srv.Last())); len(got) != 2 || got[1] != "Review hello.py now.\n" {
		t.Errorf("/review sent %q", got)
	}
	x.run("send-keys", "-t", x.name, "-l", "/deploy-check")
	x.run("send-keys", "-t", x.name, "Enter")
	x.waitFor("Deploy checked.")
	if got := nonReminders(userTexts(p.srv.Last())); len(got) != 2 || !strings.Contains(got[1], "Run the deploy checks.") {
		t.Errorf("/deploy-check sent %q", got)
	}
	x.run("send-keys", "-t", x.name, "C-c")
	x.waitFor("Press Ctrl+C again to exit")
	x.run("send-keys", "-t", x.name, "C-c")
	x.waitFor("cairn-exited-0")
	if b, err := os.ReadFile(ended); err != nil || !strings.Contains(string(b), `"reason":"prompt_input_exit"`) {
		t.Errorf("SessionEnd input %q (%v)", b, err)
	}
}

// A skill the session loaded comes back after a compaction: the request
// after /compact carries its body although the call that loaded it was
// summarised away.
func TestSkillSurvivesCompaction(t *testing.T) {
	p := newProject(t)
	skill := filepath.Join(p.dir, ".claude/skills/deploy-check")
	put(t, filepath.Join(skill, "SKILL.md"), "---\nname: deploy-check\ndescription: Checks that a deploy is safe.\n---\n# Deploy check\nRun the checks in checklist.md next to this file.\n")
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Skill", `{"skill":"deploy-check"}`)}},
		modeltest.Text("Checked."),
	)
	code, out, errOut := p.cairn(t, "-p", "is the deploy safe?", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := sessionIDOf(t, out)
	// More work after it, so the compaction summarises the call away
	// instead of keeping it in the recent messages.
	for i := range 8 {
		p.srv.Enqueue(modeltest.Text(fmt.Sprintf("step %d: %s", i, strings.Repeat("all quiet on the deploy front. ", 1500))))
		if code, _, errOut := p.cairn(t, "-p", "-r", id, fmt.Sprintf("next step %d", i)); code != 0 {
			t.Fatalf("step %d: exit %d: %s", i, code, errOut)
		}
	}
	p.srv.Enqueue(modeltest.Text("SUMMARY: the deploy was checked."))
	if code, _, errOut := p.cairn(t, "-p", "-r", id, "/compact"); code != 0 {
		t.Fatalf("/compact: exit %d: %s", code, errOut)
	}
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "-r", id, "and now?"); code != 0 {
		t.Fatalf("after /compact: exit %d: %s", code, errOut)
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "SUMMARY: the deploy was checked.") {
		t.Fatalf("the request after /compact is not the compacted one:\n%.3000s", body)
	}
	if strings.Contains(body, `"tool_use_id":"toolu_1"`) {
		t.Fatalf("the Skill call was kept verbatim, so this does not test the re-attachment:\n%.3000s", body)
	}
	if !strings.Contains(body, "Run the checks in checklist.md next to this file.") {
		t.Errorf("the loaded skill did not survive the compaction:\n%.3000s", body)
	}
}

// An @path include is read only as the Read tool would be allowed to
// read it: a file a deny rule covers stays out, with a warning.
func TestCustomCommandIncludeFollowsReadRules(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".env"), "API_TOKEN=very-secret-value\n")
	put(t, filepath.Join(p.dir, "notes.txt"), "public notes\n")
	put(t, filepath.Join(p.dir, ".cairn/settings.json"), `{"permissions": {"deny": ["Read(./.env)"]}}`)
	put(t, filepath.Join(p.dir, ".claude/commands/leak.md"), "Look at @.env and @notes.txt\n")
	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "/leak")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	body := string(p.srv.Last().Body)
	if strings.Contains(body, "very-secret-value") {
		t.Errorf("the denied .env was sent to the model")
	}
	if !strings.Contains(body, "public notes") {
		t.Errorf("the allowed include is missing")
	}
	if !strings.Contains(errOut, "@.env is not included") {
		t.Errorf("no warning about @.env:\n%s", errOut)
	}
}

// toolResultText is the text of the tool result answering id in a
// request, and whether it is an error; ok is false when the request has
// none.
func toolResultText(r *modeltest.Request, id string) (text string, isError, ok bool) {
	for _, m := range r.Params.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult && b.ToolUseID == id {
				return b.ResultText(), b.IsError != nil && *b.IsError, true
			}
		}
	}
	return "", false, false
}

// A custom command's allowed-tools hold for the model's tool calls in
// the turn the command starts, in default mode headless where the call
// would otherwise be refused; a call they do not cover is still
// refused; the grant ends with the turn (the next turn of the same
// process is refused again). The command's model names that turn's
// requests, tool rounds included, and the next turn goes back to the
// session's model.
func TestCustomCommandAllowedToolsAndModelForItsTurn(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/commands/mk.md"), "---\ndescription: Make the marker files\nallowed-tools: Bash(touch:*)\nmodel: claude-haiku-4-5\n---\nCreate the markers.\n")
	bash := func(id, command string) model.Block {
		in, _ := json.Marshal(map[string]string{"command": command, "description": "step"})
		return modeltest.ToolUse(id, "Bash", string(in))
	}
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{bash("toolu_1", "touch granted.txt")}},
		modeltest.Reply{Content: []model.Block{bash("toolu_2", "mkdir not-granted")}},
		modeltest.Text("Markers made."),
		modeltest.Reply{Content: []model.Block{bash("toolu_3", "touch after.txt")}},
		modeltest.Text("Second turn done."),
	)
	stdin := `{"type":"user","message":{"role":"user","content":"/mk"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"make one more"}}` + "\n"
	code, out, errOut := p.cairnIn(t, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--model", "claude-sonnet-4-5")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "granted.txt")); err != nil {
		t.Errorf("the call the command's allowed-tools cover did not run: %v", err)
	}
	for _, f := range []string{"not-granted", "after.txt"} {
		if _, err := os.Stat(filepath.Join(p.dir, f)); err == nil {
			t.Errorf("%s was made: a call outside the grant (or after its turn) ran", f)
		}
	}
	reqs := p.srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for id, refused := range map[string]bool{"toolu_1": false, "toolu_2": true, "toolu_3": true} {
		text, isErr, found := "", false, false
		for _, r := range reqs {
			if s, e, ok := toolResultText(r, id); ok {
				text, isErr, found = s, e, true
			}
		}
		if !found || isErr != refused {
			t.Errorf("%s: refused = %v, want %v (result %q)", id, isErr, refused, text)
		}
	}
	var models []string
	for _, r := range reqs {
		models = append(models, r.Params.Model)
	}
	want := []string{"claude-haiku-4-5", "claude-haiku-4-5", "claude-haiku-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5"}
	if diff := cmp.Diff(want, models); diff != "" {
		t.Errorf("request models (-want +got):\n%s", diff)
	}
	// The transcript records what the command allowed, as Claude Code does.
	if tr := p.transcript(t); !strings.Contains(string(tr), `"type":"command_permissions"`) || !strings.Contains(string(tr), `"allowedTools":["Bash(touch:*)"]`) {
		t.Errorf("the transcript has no command_permissions attachment:\n%s", tr)
	}
	// An alias names the Claude model it stands for.
	put(t, filepath.Join(p.dir, ".claude/commands/quick.md"), "---\nmodel: opus\n---\nQuick.\n")
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "/quick"); code != 0 {
		t.Fatalf("/quick: exit %d: %s", code, errOut)
	}
	if m := p.srv.Last().Params.Model; m != "claude-opus-4-1" {
		t.Errorf("model: opus sent %q", m)
	}
}

// A skill the model loads with the Skill tool allows its allowed-tools
// for the rest of that turn, and only that turn.
func TestSkillAllowedToolsForTheRestOfTheTurn(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/skills/marker/SKILL.md"), "---\nname: marker\ndescription: Makes marker files\nallowed-tools: Bash(touch:*)\n---\nTouch the marker.\n")
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"touch before.txt"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "Skill", `{"skill":"marker"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_3", "Bash", `{"command":"touch during.txt"}`)}},
		modeltest.Text("Marked."),
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_4", "Bash", `{"command":"touch after.txt"}`)}},
		modeltest.Text("Done."),
	)
	stdin := `{"type":"user","message":{"role":"user","content":"mark it"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"once more"}}` + "\n"
	if code, out, errOut := p.cairnIn(t, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json"); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	got := map[string]bool{}
	for _, f := range []string{"before.txt", "during.txt", "after.txt"} {
		_, err := os.Stat(filepath.Join(p.dir, f))
		got[f] = err == nil
	}
	if diff := cmp.Diff(map[string]bool{"before.txt": false, "during.txt": true, "after.txt": false}, got); diff != "" {
		t.Errorf("files made (-want +got):\n%s", diff)
	}
}

// Bad extension files, through the binary: each is a warning naming its
// file, and the rest loads and works — a command with broken front
// matter (its body still used), a skill without a name (offered by its
// folder's name), a command and a skill sharing a name (the skill wins),
// a 10 MB skill (not loaded), an @ include outside the project (not
// sent).
func TestExtensionBadInput(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(filepath.Dir(p.dir), filepath.Base(p.dir)+"-outside.txt")
	put(t, outside, "outside-secret\n")
	t.Cleanup(func() { os.Remove(outside) })
	cmds, skills := filepath.Join(p.dir, ".claude/commands"), filepath.Join(p.dir, ".claude/skills")
	put(t, filepath.Join(cmds, "broken.md"), "---\ndescription: [oops\n---\nBroken but usable. Also @../"+filepath.Base(outside)+"\n")
	put(t, filepath.Join(skills, "nameless/SKILL.md"), "---\ndescription: Has no name\n---\nNameless body.\n")
	put(t, filepath.Join(cmds, "clash.md"), "the command that loses\n")
	put(t, filepath.Join(skills, "clash/SKILL.md"), "---\nname: clash\ndescription: The skill that wins\n---\nSkill body.\n")
	put(t, filepath.Join(skills, "huge/SKILL.md"), "---\nname: huge\ndescription: Too big\n---\n"+strings.Repeat("x", 10<<20))

	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "/broken")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		filepath.Join(cmds, "broken.md") + ": ",
		filepath.Join(skills, "nameless/SKILL.md") + " has no name",
		"the skill " + filepath.Join(skills, "clash/SKILL.md") + " and the command " + filepath.Join(cmds, "clash.md"),
		filepath.Join(skills, "huge/SKILL.md") + " is not loaded: it is 10.0 MB",
		filepath.Join(cmds, "broken.md") + ": @../" + filepath.Base(outside) + " is not included: it is outside the project",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	last := p.srv.Last()
	if got := nonReminders(userTexts(last)); len(got) != 2 || !strings.HasPrefix(got[1], "Broken but usable.") {
		t.Errorf("/broken sent %q, want its body", got)
	}
	body := string(last.Body)
	if strings.Contains(body, "outside-secret") {
		t.Error("the file outside the project was sent")
	}
	_, listed := listingsOf(last)
	listing := strings.Join(listed, "\n")
	for _, want := range []string{"- nameless: Has no name", "- clash: The skill that wins"} {
		if !strings.Contains(listing, want) {
			t.Errorf("the listing lacks %q: %q", want, listed)
		}
	}
	if strings.Contains(listing, "huge") || strings.Contains(body, "xxxxxxxxxx") {
		t.Error("the 10 MB skill was offered or sent")
	}
	p.srv.Enqueue(modeltest.Text("ok"))
	if code, _, errOut := p.cairn(t, "-p", "/clash"); code != 0 {
		t.Fatalf("/clash: exit %d: %s", code, errOut)
	}
	if got := nonReminders(userTexts(p.srv.Last())); len(got) != 2 || !strings.Contains(got[1], "Skill body.") {
		t.Errorf("/clash sent %q, want the skill's body", got)
	}
}

// listingsOf are the text blocks of the request's messages that lists the
// skills (reminders in user messages), with the index of each message.
// The system prompt must not list them.
func listingsOf(r *modeltest.Request) (at []int, texts []string) {
	for i, m := range r.Params.Messages {
		for _, b := range m.Content {
			if m.Role == model.RoleUser && b.Type == model.BlockText && strings.HasPrefix(b.Text, "<system-reminder>") && strings.Contains(b.Text, "the Skill tool") {
				at, texts = append(at, i), append(texts, b.Text)
			}
		}
	}
	return at, texts
}

func textsOf(m model.Message) []string {
	var out []string
	for _, b := range m.Content {
		if b.Type == model.BlockText {
			out = append(out, b.Text)
		}
	}
	return out
}

// TestSkillListing: the skills (and the commands the model may run) are
// listed as Claude Code lists them, in a reminder of the session's first
// user message, never in the system prompt; a resume sends the same first
// message (the cached prefix holds), a skill added or changed since is
// listed on the next prompt alone, a compaction lists them all again
// after its summary, and `cairn context` counts the listing as skills.
func TestSkillListing(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: summarizer})
	put(t, filepath.Join(p.dir, ".claude/skills/deploy-check/SKILL.md"), "---\nname: deploy-check\ndescription: Checks that a deploy is safe.\n---\nRun the checks.\n")
	put(t, filepath.Join(p.dir, ".claude/commands/review.md"), "---\ndescription: Review a file\n---\nReview $ARGUMENTS.\n")
	// run runs cairn and returns the request of the turn: the first whose
	// last message holds the prompt (session notes may follow it).
	run := func(args ...string) *modeltest.Request {
		t.Helper()
		before := len(p.srv.Requests())
		if code, _, errOut := p.cairn(t, args...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		for _, r := range p.srv.Requests()[before:] {
			if msgs := r.Params.Messages; len(msgs) > 0 && hasText(textsOf(msgs[len(msgs)-1]), args[len(args)-1]) {
				return r
			}
		}
		t.Fatalf("%q: no request sent the prompt", args)
		return nil
	}

	first := run("-p", "first question")
	at, listings := listingsOf(first)
	if len(at) != 1 || at[0] != 0 || !strings.Contains(listings[0], "- deploy-check: Checks that a deploy is safe.") || !strings.Contains(listings[0], "- review: Review a file") {
		t.Fatalf("want one listing of both in the first message, got %v %q", at, listings)
	}
	if sys := systemText(first); strings.Contains(sys, "deploy-check") {
		t.Errorf("the system prompt lists the skills too:\n%s", sys)
	}
	if !slicesContain(first.Params.ToolNames(), "Skill") {
		t.Errorf("tools %v have no Skill", first.Params.ToolNames())
	}

	// A resume with nothing changed: the same first message, no new listing.
	again := run("-c", "-p", "second question")
	// The first message's texts: its cache breakpoint moves on.
	firstMsg := func(r *modeltest.Request) string { return strings.Join(textsOf(r.Params.Messages[0]), "\n--\n") }
	if firstMsg(again) != firstMsg(first) {
		t.Errorf("the resumed first message differs, the cache breaks:\n%s\n%s", firstMsg(first), firstMsg(again))
	}
	if at, _ := listingsOf(again); len(at) != 1 {
		t.Errorf("listings in messages %v after a resume; want the first one only", at)
	}

	// A skill added and a description changed: listed on the next prompt.
	put(t, filepath.Join(p.dir, ".claude/skills/lint/SKILL.md"), "---\nname: lint\ndescription: Lints the code.\n---\nLint.\n")
	put(t, filepath.Join(p.dir, ".claude/commands/review.md"), "---\ndescription: Review a file closely\n---\nReview $ARGUMENTS.\n")
	delta := run("-c", "-p", "third question")
	at, listings = listingsOf(delta)
	last := len(delta.Params.Messages) - 1
	if len(at) != 2 || at[1] != last || !strings.Contains(listings[1], "- lint: Lints the code.") || !strings.Contains(listings[1], "- review: Review a file closely") || strings.Contains(listings[1], "deploy-check") {
		t.Fatalf("want the new and changed ones listed in the last message (%d), got %v %q", last, at, listings)
	}
	if firstMsg(delta) != firstMsg(first) {
		t.Error("the first message changed with the delta")
	}

	// A compaction lists them all again, after the summary.
	if code, _, errOut := p.cairn(t, "-c", "-p", "/compact"); code != 0 {
		t.Fatalf("/compact: exit %d: %s", code, errOut)
	}
	after := run("-c", "-p", "fourth question")
	at, listings = listingsOf(after)
	if len(at) != 1 || !strings.Contains(after.Params.Messages[0].Content[0].Text, "THE-SUMMARY") {
		t.Fatalf("after the compaction: listings %v; first message %q", at, after.Params.Messages[0].Content[0].Text)
	}
	for _, s := range []string{"- deploy-check: Checks that a deploy is safe.", "- lint: Lints the code.", "- review: Review a file closely"} {
		if !strings.Contains(listings[0], s) {
			t.Errorf("the listing after the compaction lacks %q:\n%s", s, listings[0])
		}
	}

	// cairn context counts the listing as skills, not as messages.
	code, out, errOut := p.cairn(t, "context", "--json")
	if code != 0 {
		t.Fatalf("context: exit %d: %s", code, errOut)
	}
	var rep struct {
		Breakdown struct{ Skills int64 }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := tokens.EstimateBlock(model.TextBlock(listings[0])); rep.Breakdown.Skills != want {
		t.Errorf("context counts %d tokens of skills, want the listing's %d", rep.Breakdown.Skills, want)
	}
}

// TestCustomCommandAllowedToolsInTerminalUI: typed in the terminal UI as
// /name args, a command with allowed-tools and model frontmatter runs the
// call its allowed-tools cover without a permission prompt, and its
// turn's requests name its model; the next turn, typed as a plain
// prompt, asks before the same kind of call and goes with the session's
// model.
func TestCustomCommandAllowedToolsInTerminalUI(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/commands/mk.md"), "---\ndescription: Make a marker file\nargument-hint: <name>\nallowed-tools: Bash(touch:*)\nmodel: claude-haiku-4-5\n---\nCreate the marker $ARGUMENTS.\n")
	bash := func(id, command string) model.Block {
		in, _ := json.Marshal(map[string]string{"command": command, "description": "step"})
		return modeltest.ToolUse(id, "Bash", string(in))
	}
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{bash("toolu_1", "touch granted.txt")}},
		modeltest.Text("Marker made."),
		modeltest.Reply{Content: []model.Block{bash("toolu_2", "touch after.txt")}},
		modeltest.Text("NOT-SENT: the refused call ends the turn."),
	)
	x := p.openUI(t, "--model", "claude-sonnet-4-5")

	x.send("/mk granted.txt")
	// A permission prompt would wait for the person: the answer shows only
	// if the call ran without one.
	s := x.waitFor("Marker made.")
	if strings.Contains(s, "Do you want to proceed?") {
		t.Errorf("the command's allowed call asked:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "granted.txt")); err != nil {
		t.Errorf("the call the command's allowed-tools cover did not run: %v", err)
	}
	if got := nonReminders(userTexts(p.srv.Requests()[0])); len(got) != 2 || got[1] != "Create the marker granted.txt.\n" {
		t.Errorf("/mk sent %q", got)
	}

	x.send("make one more")
	x.waitFor("Do you want to proceed?")
	x.keys("Escape")
	x.waitFor("took the control back")
	if _, err := os.Stat(filepath.Join(p.dir, "after.txt")); err == nil {
		t.Error("the call after the command's turn ran without asking")
	}

	var models []string
	for _, r := range p.srv.Requests() {
		if r.Path == "/v1/messages" {
			models = append(models, r.Params.Model)
		}
	}
	want := []string{"claude-haiku-4-5", "claude-haiku-4-5", "claude-sonnet-4-5"}
	if diff := cmp.Diff(want, models); diff != "" {
		t.Errorf("request models (-want +got):\n%s", diff)
	}
}

// A first prompt a UserPromptSubmit hook refuses is not sent, and neither
// is its listing: the next prompt, the first the model sees, lists the
// skills.
func TestSkillListingAfterRefusedPrompt(t *testing.T) {
	p := newProject(t)
	p.withHooks(t, `{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "$H/gate.sh"}]}]}`,
		map[string]string{"gate.sh": `if grep -q REFUSE; then echo 'not this one' >&2; exit 2; fi`})
	put(t, filepath.Join(p.dir, ".claude/skills/deploy-check/SKILL.md"), "---\nname: deploy-check\ndescription: Checks that a deploy is safe.\n---\nRun the checks.\n")
	p.srv.Enqueue(modeltest.Text("ok"))
	stdin := `{"type":"user","message":{"role":"user","content":"REFUSE this"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"hello"}}` + "\n"
	code, out, errOut := p.cairnIn(t, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json")
	if code != 0 && !strings.Contains(out, `"result":"ok"`) {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	reqs := p.srv.Requests()
	if len(reqs) == 0 {
		t.Fatalf("no request: %s\n%s", errOut, out)
	}
	if at, listed := listingsOf(reqs[0]); len(at) != 1 || at[0] != 0 || !strings.Contains(listed[0], "- deploy-check: Checks that a deploy is safe.") {
		t.Errorf("the first request sent lists %q in messages %v; want the skill in the first", listed, at)
	}
}
