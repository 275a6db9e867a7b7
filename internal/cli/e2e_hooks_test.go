package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// withHooks writes the project's .claude/settings.json with the given
// "hooks" object and each script as .claude/hooks/NAME, executable. In
// the settings, $H stands for the scripts' folder.
func (p *project) withHooks(t *testing.T, hooks string, scripts map[string]string) {
	t.Helper()
	dir := filepath.Join(p.dir, ".claude", "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hooks = strings.ReplaceAll(hooks, "$H", `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks`)
	settings := `{"hooks": ` + hooks + `}`
	if !json.Valid([]byte(settings)) {
		t.Fatalf("settings are not JSON: %s", settings)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
}

// transcript returns the project's only session file.
func (p *project) transcript(t *testing.T) []byte {
	t.Helper()
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v, %v", infos, err)
	}
	data, err := os.ReadFile(infos[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestHookBlocksRm(t *testing.T) {
	p := newProject(t)
	p.withHooks(t,
		`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$H/no-rm.sh"}]}]}`,
		map[string]string{"no-rm.sh": `if grep -q '"command":"rm '; then echo "rm is not allowed here; move files to ./trash instead" >&2; exit 2; fi`},
	)
	build := filepath.Join(p.dir, "build")
	if err := os.Mkdir(build, 0o755); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"rm -rf build"}`)}},
		modeltest.Text("I will not delete it."),
	)
	// bypassPermissions would let rm run: only the hook stands in the way.
	code, out, errOut := p.cairn(t, "-p", "clean up", "--output-format", "json", "--permission-mode", "bypassPermissions")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(build); err != nil {
		t.Errorf("build is gone: %v", err)
	}
	body := string(p.srv.Last().Body)
	if !strings.Contains(body, "rm is not allowed here; move files to ./trash instead") || !strings.Contains(body, `"is_error":true`) {
		t.Errorf("the hook's stderr did not reach the model: %s", body)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if d, _ := res["permission_denials"].([]any); len(d) != 1 {
		t.Errorf("permission_denials %v", res["permission_denials"])
	}
	if data := p.transcript(t); !bytes.Contains(data, []byte(`"permissionDecision":{"decision":"deny","by":"hook"`)) {
		t.Errorf("the hook's decision is not on the result line:\n%s", data)
	}
}

func TestHookRewritesBashCommand(t *testing.T) {
	p := newProject(t)
	rewrite := `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "rewritten by policy", "updatedInput": {"command": "echo rewritten > out.txt"}}}`
	p.withHooks(t,
		`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$H/rewrite.sh"}]}],
		  "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$H/post.sh"}]}]}`,
		map[string]string{
			"rewrite.sh": `if grep -q 'original'; then echo '` + rewrite + `'; fi`,
			// The PostToolUse hook sees the input the call ran with.
			"post.sh": `if grep -q 'rewritten'; then echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "post saw the rewrite"}}'; fi`,
		},
	)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo original > out.txt"}`)}},
		modeltest.Text("Written."),
	)
	// In default mode a redirection asks, and headless would refuse: the
	// hook's allow waives that question.
	code, _, errOut := p.cairn(t, "-p", "write the file")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, err := os.ReadFile(filepath.Join(p.dir, "out.txt"))
	if err != nil || string(got) != "rewritten\n" {
		t.Errorf("out.txt is %q (%v), want the rewritten command's output", got, err)
	}
	if body := string(p.srv.Last().Body); !strings.Contains(body, "PostToolUse:Bash hook additional context: post saw the rewrite") {
		t.Errorf("the PostToolUse context is not in the result: %s", body)
	}
	if data := p.transcript(t); !bytes.Contains(data, []byte(`"decision":"allow","by":"hook"`)) {
		t.Errorf("the hook's allow is not recorded:\n%s", data)
	}
}

// TestHookDecisionsMeetRules checks how a PreToolUse hook's answer
// combines with the permission rules: as in Claude Code, an allow waives
// the mode's question but not a deny or an ask rule, and an ask takes
// the ask path, which a headless run refuses.
func TestHookDecisionsMeetRules(t *testing.T) {
	decide := func(d string) string {
		return `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "` + d + `", "permissionDecisionReason": "hook says ` + d + `"}}'`
	}
	tests := []struct {
		name     string
		script   string
		rules    string // .cairn/settings.json
		mode     string
		ran      bool
		toModel  string // a part of the result the model reads
		recorded string // a part of the result line's permissionDecision
	}{
		{"allow waives the mode's question", decide("allow"), `{}`, "default", true, "", `"decision":"allow","by":"hook"`},
		{"allow does not beat a deny rule", decide("allow"), `{"permissions": {"deny": ["Bash(touch:*)"]}}`, "default", false, "denied", `"decision":"deny","by":"rule"`},
		{"allow does not beat an ask rule", decide("allow"), `{"permissions": {"ask": ["Bash(touch:*)"]}}`, "default", false, "headless mode cannot ask", `"decision":"deny","by":"headless"`},
		{"ask is refused headless, even in bypass mode", decide("ask"), `{}`, "bypassPermissions", false, "asks for confirmation (hook says ask), and headless mode cannot ask", `"decision":"deny","by":"headless"`},
		{"deny beats an allow rule", decide("deny"), `{"permissions": {"allow": ["Bash(touch:*)"]}}`, "default", false, "refused this call: hook says deny", `"decision":"deny","by":"hook"`},
		{"continue false stops the call and the run", `echo '{"continue": false, "stopReason": "maintenance window"}'`, `{}`, "bypassPermissions", false, "", `"decision":"deny","by":"hook"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t)
			p.withHooks(t, `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "$H/decide.sh"}]}]}`,
				map[string]string{"decide.sh": tt.script})
			if err := os.MkdirAll(filepath.Join(p.dir, ".cairn"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.dir, ".cairn", "settings.json"), []byte(tt.rules), 0o644); err != nil {
				t.Fatal(err)
			}
			p.srv.Enqueue(
				modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"touch made.txt"}`)}},
				modeltest.Text("Done."),
			)
			code, _, errOut := p.cairn(t, "-p", "touch it", "--permission-mode", tt.mode)
			_, err := os.Stat(filepath.Join(p.dir, "made.txt"))
			if ran := err == nil; ran != tt.ran {
				t.Errorf("the call ran: %v, want %v (stderr %q)", ran, tt.ran, errOut)
			}
			if strings.Contains(tt.script, "continue") {
				if code != 1 || !strings.Contains(errOut, "the PreToolUse:Bash hook stopped the run: maintenance window") || len(p.srv.Requests()) != 1 {
					t.Errorf("exit %d, %d requests, stderr %q", code, len(p.srv.Requests()), errOut)
				}
			} else if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			} else if body := string(p.srv.Last().Body); !strings.Contains(body, tt.toModel) {
				t.Errorf("the model read no %q: %s", tt.toModel, body)
			}
			if data := p.transcript(t); !bytes.Contains(data, []byte(tt.recorded)) {
				t.Errorf("no %s on the result line:\n%s", tt.recorded, data)
			}
		})
	}
}

func TestHookAddsPromptContext(t *testing.T) {
	p := newProject(t)
	p.withHooks(t,
		`{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "$H/prompt.sh"}]}],
		  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo Fresh session."}]},
		                   {"matcher": "resume", "hooks": [{"type": "command", "command": "echo Welcome back."}]}]}`,
		map[string]string{"prompt.sh": `grep -q '"prompt":"what now?"' && echo "The release branch is frozen."`},
	)
	p.srv.Enqueue(modeltest.Text("Noted."))
	if code, _, errOut := p.cairn(t, "-p", "what now?"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	body := string(p.srv.Last().Body)
	for _, want := range []string{
		`<system-reminder>\nUserPromptSubmit hook additional context: The release branch is frozen.\n</system-reminder>`,
		`SessionStart:startup hook additional context: Fresh session.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %q: %s", want, body)
		}
	}
	if data := p.transcript(t); !bytes.Contains(data, []byte(`"type":"hook_additional_context"`)) {
		t.Errorf("no hook_additional_context attachment in the transcript:\n%s", data)
	}

	// A resume replays the recorded context and adds the resume hook's.
	p.srv.Enqueue(modeltest.Text("Still noted."))
	if code, _, errOut := p.cairn(t, "-c", "-p", "and then?"); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	body = string(p.srv.Last().Body)
	if !strings.Contains(body, "The release branch is frozen.") || !strings.Contains(body, "SessionStart:resume hook additional context: Welcome back.") {
		t.Errorf("resumed request: %s", body)
	}
}

func TestHookBlocksPrompt(t *testing.T) {
	p := newProject(t)
	p.withHooks(t,
		`{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'prompts must not contain passwords' >&2; exit 2"}]}]}`, nil)
	code, out, errOut := p.cairn(t, "-p", "my password is hunter2")
	if code != 1 || out != "" || !strings.Contains(errOut, "prompts must not contain passwords") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := len(p.srv.Requests()); n != 0 {
		t.Errorf("%d requests; a blocked prompt must not reach the model", n)
	}
	// The session's file is opened before the prompt, but nothing is written.
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Bytes != 0 || info.Messages != 0 {
			t.Errorf("session %+v; nothing should be recorded", info)
		}
	}
}

func TestStopHookKeepsTurnGoing(t *testing.T) {
	p := newProject(t)
	p.withHooks(t,
		`{"Stop": [{"hooks": [{"type": "command", "command": "$H/stop.sh"}]}]}`,
		map[string]string{"stop.sh": `if grep -q '"stop_hook_active":true'; then exit 0; fi
echo '{"decision": "block", "reason": "Run the tests before you finish."}'`},
	)
	p.srv.Enqueue(modeltest.Text("Done."), modeltest.Text("Tests pass; done."))
	code, out, errOut := p.cairn(t, "-p", "fix it")
	if code != 0 || out != "Tests pass; done.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	reqs := p.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Run the tests before you finish.") {
		t.Errorf("%d requests; the second must carry the Stop hook's reason", len(reqs))
	}
}

func TestHangingHookDoesNotStall(t *testing.T) {
	p := newProject(t)
	p.withHooks(t,
		`{"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "$H/hang.sh", "timeout": 1}]}]}`,
		map[string]string{"hang.sh": `sleep 120 & echo $! > "$CLAUDE_PROJECT_DIR/sleep.pid"; wait`},
	)
	p.srv.Enqueue(modeltest.Text("Answered anyway."))
	start := time.Now()
	code, out, errOut := p.cairn(t, "-p", "hello")
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("the run took %v", elapsed)
	}
	if code != 0 || out != "Answered anyway.\n" || !strings.Contains(errOut, "timeout (1s)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, "sleep.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q", b)
	}
	proctest.WaitGone(t, pid, "its hook timed out")
}

// TestSubagentHooks: SubagentStart and SubagentStop hooks run for the
// subagent types their matchers name. The start hook's context goes
// with the subagent's task in its first request; the stop hook blocks
// once (not when stop_hook_active), so the subagent goes on with the
// hook's reason and its final report — the one the session gets — heeds
// it. The inputs name the session and its transcript, and the subagent,
// its type and its own transcript. The session's Stop hook runs for the
// session only.
func TestSubagentHooks(t *testing.T) {
	p := newProject(t)
	p.withAgent(t, "reviewer", "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\n---\nReview carefully.\n")
	p.withHooks(t,
		`{"SubagentStart": [{"matcher": "reviewer", "hooks": [{"type": "command", "command": "$H/start.sh"}]}],
		  "SubagentStop": [{"matcher": "reviewer", "hooks": [{"type": "command", "command": "$H/substop.sh"}]},
		                   {"matcher": "Explore", "hooks": [{"type": "command", "command": "$H/other.sh"}]}],
		  "Stop": [{"hooks": [{"type": "command", "command": "$H/stop.sh"}]}]}`,
		map[string]string{
			"start.sh": `cat > "$CLAUDE_PROJECT_DIR/start.json"
echo '{"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "START-CONTEXT: the tests live in tests/."}}'`,
			"substop.sh": `in=$(cat); printf '%s\n' "$in" >> "$CLAUDE_PROJECT_DIR/substop.jsonl"
case "$in" in *'"stop_hook_active":true'*) exit 0;; esac
echo 'Cite a line number for each finding.' >&2; exit 2`,
			"other.sh": `touch "$CLAUDE_PROJECT_DIR/other-ran"`,
			"stop.sh":  `echo stop >> "$CLAUDE_PROJECT_DIR/stop.log"`,
		},
	)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case childTask(r) != "" && bytes.Contains(r.Body, []byte("Cite a line number for each finding.")):
			return modeltest.Text("FINAL: hello.py:1 prints hello.")
		case childTask(r) != "":
			return modeltest.Text("DRAFT: it prints hello.")
		case bytes.Contains(r.Body, []byte(`"tool_use_id":"toolu_task"`)):
			return modeltest.Text("The reviewer says hello.py:1 prints hello.")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task",
			`{"description":"Review hello.py","prompt":"REVIEW: what does hello.py print?","subagent_type":"reviewer"}`)}}
	}})

	code, out, errOut := p.cairnQuiet(t, "-p", "review hello.py", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var kids []*modeltest.Request
	for _, r := range p.srv.Requests() {
		if childTask(r) != "" {
			kids = append(kids, r)
		}
	}
	if len(kids) != 2 {
		t.Fatalf("%d subagent requests, want 2 (the stop hook sends it on once)", len(kids))
	}
	if first := kids[0].Params.Messages[0]; first.Content[0].Text != "REVIEW: what does hello.py print?" || !strings.Contains(first.Text(), "START-CONTEXT: the tests live in tests/.") {
		t.Errorf("the subagent's task does not carry the SubagentStart context: %+v", first)
	}
	if !bytes.Contains(kids[1].Body, []byte("did not let the subagent finish yet: Cite a line number for each finding.")) {
		t.Errorf("the subagent's second request lacks the hook's reason:\n%s", kids[1].Body)
	}
	last := p.srv.Last()
	if !bytes.Contains(last.Body, []byte("FINAL: hello.py:1 prints hello.")) || bytes.Contains(last.Body, []byte("DRAFT")) {
		t.Errorf("the session did not get the final report alone:\n%s", last.Body)
	}

	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v, %v", infos, err)
	}
	sess := infos[0]
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(sess.Path), sess.SessionID, "subagents", "agent-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("subagent transcripts %v", files)
	}
	agentID := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(files[0]), "agent-"), ".jsonl")

	data, err := os.ReadFile(filepath.Join(p.dir, "substop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var stops []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var in map[string]any
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			t.Fatalf("hook input %q: %v", l, err)
		}
		stops = append(stops, in)
	}
	if len(stops) != 2 {
		t.Fatalf("the SubagentStop hook ran %d times, want 2", len(stops))
	}
	for i, in := range stops {
		want := map[string]any{
			"session_id": sess.SessionID, "transcript_path": sess.Path, "cwd": in["cwd"], "permission_mode": "default",
			"hook_event_name": "SubagentStop", "stop_hook_active": i == 1,
			"agent_id": agentID, "agent_type": "reviewer", "agent_transcript_path": files[0],
			"last_assistant_message": []string{"DRAFT: it prints hello.", "FINAL: hello.py:1 prints hello."}[i],
		}
		if diff := cmp.Diff(want, in); diff != "" {
			t.Errorf("SubagentStop input %d (-want +got):\n%s", i+1, diff)
		}
	}
	var start map[string]any
	if b, err := os.ReadFile(filepath.Join(p.dir, "start.json")); err != nil || json.Unmarshal(b, &start) != nil {
		t.Fatalf("SubagentStart input: %v\n%s", err, b)
	}
	if start["hook_event_name"] != "SubagentStart" || start["agent_id"] != agentID || start["agent_type"] != "reviewer" || start["session_id"] != sess.SessionID {
		t.Errorf("SubagentStart input %v", start)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "other-ran")); err == nil {
		t.Error("a SubagentStop hook for Explore ran for a reviewer")
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, "stop.log")); string(b) != "stop\n" {
		t.Errorf("the Stop hook ran %q, want once, for the session", b)
	}
}

// TestStopHookReadsTheWholeTurn: the transcript a Stop hook is pointed at
// already holds the reply that ends the turn.
func TestStopHookReadsTheWholeTurn(t *testing.T) {
	p := newProject(t)
	p.withHooks(t, `{"Stop": [{"hooks": [{"type": "command", "command": "$H/stop"}]}]}`, map[string]string{
		"stop": `path=$(sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p'); ` +
			`if grep -q FINAL-REPLY-MARK "$path"; then echo seen > "$CLAUDE_PROJECT_DIR/stop.txt"; else echo missing > "$CLAUDE_PROJECT_DIR/stop.txt"; fi`,
	})
	for range 3 { // the reply is written in the background: try a few times
		p.srv.Enqueue(modeltest.Text("FINAL-REPLY-MARK: done."))
		if code, _, errOut := p.cairn(t, "-p", "finish"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if b, _ := os.ReadFile(filepath.Join(p.dir, "stop.txt")); string(b) != "seen\n" {
			t.Fatalf("the Stop hook found the transcript without the final reply: %q", b)
		}
	}
}
