package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/cli"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// run runs cairn in-process (cli.Run) in the project against the fake
// server, with stdin as its standard input.
func (p *project) run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	vars := map[string]string{"CAIRN_HOME": p.home, "ANTHROPIC_BASE_URL": p.srv.URL, "ANTHROPIC_API_KEY": "test-key", "HOME": p.home}
	for _, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var out, errb bytes.Buffer
	env := cli.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] },
		Now:    time.Now, Cwd: p.dir,
	}
	code = cli.Run(context.Background(), args, env)
	return code, out.String(), errb.String()
}

// sessionIDs are the ids of the project's session files, as on disk.
func (p *project) sessionIDs(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(session.Home{Dir: p.home}.ProjectDir(p.dir), "*.jsonl"))
	var ids []string
	for _, f := range files {
		ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
	}
	return ids
}

var idTag = regexp.MustCompile(`\n\[id:[0-9a-z]+\]$`)

// said is the text of a request's messages, one "role: text" line a
// text block, without the message tags cairn adds and without reminders.
func said(r *modeltest.Request) []string {
	var lines []string
	for _, m := range r.Params.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockText && !strings.HasPrefix(b.Text, "<system-reminder>") {
				lines = append(lines, m.Role+": "+idTag.ReplaceAllString(b.Text, ""))
			}
		}
	}
	return lines
}

// parityRun is one row's run, for its check.
type parityRun struct {
	code           int
	stdout, stderr string
	p              *project
	seed           string // the session the row's project started with
	reqs           []*modeltest.Request
}

func (r parityRun) last(t *testing.T) *modeltest.Request {
	t.Helper()
	if len(r.reqs) == 0 {
		t.Fatalf("no request sent; stderr %q", r.stderr)
	}
	return r.reqs[len(r.reqs)-1]
}

// resumed checks that the run continued the seed session with prompt.
func resumed(prompt string) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		got := strings.Join(said(r.last(t)), " | ")
		if want := "user: first | assistant: OK | user: " + prompt; got != want {
			t.Errorf("sent %q, want %q", got, want)
		}
	}
}

// fresh checks that the run sent prompt in a new session.
func fresh(prompt string) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		if got, want := strings.Join(said(r.last(t)), " | "), "user: "+prompt; got != want {
			t.Errorf("sent %q, want %q", got, want)
		}
	}
}

// touched checks which of the files the model's Bash touch calls made.
func touched(want ...string) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		for _, name := range []string{"a.txt", "b.txt"} {
			_, err := os.Stat(filepath.Join(r.p.dir, name))
			if made, wanted := err == nil, strings.Contains(strings.Join(want, " "), name); made != wanted {
				t.Errorf("%s made: %v, want %v (stderr %q)", name, made, wanted, r.stderr)
			}
		}
	}
}

// globRefused checks whether the model's Glob call was refused.
func globRefused(want bool) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		for _, m := range r.last(t).Params.Messages {
			for _, b := range m.Content {
				if b.Type == model.BlockToolResult {
					refused := b.IsError != nil && *b.IsError
					if refused != want {
						t.Errorf("Glob refused: %v, want %v: %s", refused, want, b.Content)
					}
					return
				}
			}
		}
		t.Errorf("no tool result sent")
	}
}

func resultJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil || m["type"] != "result" {
		t.Fatalf("the last line is not a result: %q (%v)", out, err)
	}
	return m
}

func all(checks ...func(*testing.T, parityRun)) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		for _, c := range checks {
			c(t, r)
		}
	}
}

// TestClaudeCodeFlagForms runs each form of the flags cairn shares with
// Claude Code, as Claude Code 2.1.332 parses them (observed by running it
// against the fake server): one row a form. In args, ID stands for the id
// of a session the project already has and PREFIX for its first 8
// characters.
func TestClaudeCodeFlagForms(t *testing.T) {
	touchAB := []modeltest.Reply{
		{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"touch a.txt"}`), modeltest.ToolUse("toolu_2", "Bash", `{"command":"touch b.txt"}`)}},
		modeltest.Text("Done."),
	}
	globPy := []modeltest.Reply{{Content: []model.Block{modeltest.ToolUse("toolu_1", "Glob", `{"pattern":"*.py"}`)}}, modeltest.Text("Found it.")}
	writeA := []modeltest.Reply{{Content: []model.Block{modeltest.ToolUse("toolu_1", "Write", `{"file_path":"PROJECT/a.txt","content":"x"}`)}}, modeltest.Text("Wrote it.")}
	const newID = "0f8fad5b-d9cb-469f-a165-70867728950e"
	rows := []struct {
		name    string
		args    []string
		replies []modeltest.Reply
		code    int
		stderr  string // a part of stderr
		check   func(*testing.T, parityRun)
	}{
		// --resume: an optional value, the next argument unless it is a flag.
		{name: "-r ID", args: []string{"-r", "ID", "-p", "hi"}, check: resumed("hi")},
		{name: "-r=ID", args: []string{"-r=ID", "-p", "hi"}, check: resumed("hi")},
		{name: "-rID", args: []string{"-rID", "-p", "hi"}, check: resumed("hi")},
		{name: "--resume ID", args: []string{"--resume", "ID", "-p", "hi"}, check: resumed("hi")},
		{name: "--resume=ID", args: []string{"--resume=ID", "-p", "hi"}, check: resumed("hi")},
		{name: "--resume ID after the prompt", args: []string{"-p", "hi", "--resume", "ID"}, check: resumed("hi")},
		{name: "--resume ID before the prompt", args: []string{"-p", "--resume", "ID", "hi"}, check: resumed("hi")},
		{name: "-pr ID", args: []string{"-pr", "ID", "hi"}, check: resumed("hi")},
		{name: "-r PREFIX", args: []string{"-r", "PREFIX", "-p", "hi"}, check: resumed("hi")},
		{name: "-r alone before a flag", args: []string{"-r", "-p", "hi"}, code: 2, stderr: "session picker"},
		{name: "--resume last", args: []string{"-p", "hi", "--resume"}, code: 2, stderr: "session picker"},
		{name: "-r unknown id", args: []string{"-r", "nosuchsession", "-p", "hi"}, code: 1, stderr: `no session with id "nosuchsession"`},
		{name: "-r unknown id, no terminal", args: []string{"explain", "-r", "nosuchsession"}, code: 1, stderr: `no session with id "nosuchsession"`},
		{name: "prompt then -r ID, no terminal", args: []string{"explain", "-r", "ID"}, check: resumed("explain")},
		{name: "-c -p", args: []string{"-c", "-p", "hi"}, check: resumed("hi")},
		{name: "--continue --print", args: []string{"--continue", "--print", "hi"}, check: resumed("hi")},
		{name: "--fork-session", args: []string{"-r", "ID", "--fork-session", "-p", "hi"}, check: func(t *testing.T, r parityRun) {
			resumed("hi")(t, r)
			if ids := r.p.sessionIDs(t); len(ids) != 2 {
				t.Errorf("sessions %v, want the seed and its fork", ids)
			}
		}},
		{name: "--session-id", args: []string{"--session-id", newID, "-p", "hi"}, check: func(t *testing.T, r parityRun) {
			fresh("hi")(t, r)
			if _, err := os.Stat(filepath.Join(session.Home{Dir: r.p.home}.ProjectDir(r.p.dir), newID+".jsonl")); err != nil {
				t.Error(err)
			}
		}},
		{name: "--session-id=bad", args: []string{"--session-id=bad", "-p", "hi"}, code: 2, stderr: "not a UUID"},

		// --allowedTools/--disallowedTools: every argument up to the next flag, each comma or space separated.
		{name: "--allowedTools a b", args: []string{"--allowedTools", "Bash(touch a.txt)", "Bash(touch b.txt)", "-p", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: `--allowedTools "a,b"`, args: []string{"--allowedTools", "Bash(touch a.txt),Bash(touch b.txt)", "-p", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: `--allowedTools "a b"`, args: []string{"--allowedTools", "Bash(touch a.txt) Bash(touch b.txt)", "-p", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: "--allowedTools=a", args: []string{"--allowedTools=Bash(touch a.txt)", "-p", "go"}, replies: touchAB, check: touched("a.txt")},
		{name: "--allowed-tools a", args: []string{"--allowed-tools", "Bash(touch:*)", "-p", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: "--allowedTools last", args: []string{"-p", "go", "--allowedTools", "Bash(touch b.txt)"}, replies: touchAB, check: touched("b.txt")},
		{name: "--allowedTools takes the prompt", args: []string{"-p", "--allowedTools", "Bash", "go"}, code: 2, stderr: "no prompt"},
		{name: "--allowedTools a -- prompt", args: []string{"-p", "--allowedTools", "Bash", "--", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: "no --allowedTools", args: []string{"-p", "go"}, replies: touchAB, check: touched()},
		{name: "--allowedTools alone", args: []string{"-p", "go", "--allowedTools"}, code: 2, stderr: "needs at least one rule"},
		{name: "--disallowedTools a", args: []string{"--disallowedTools", "Glob", "-p", "go"}, replies: globPy, check: globRefused(true)},
		{name: `--disallowed-tools "a,b"`, args: []string{"--disallowed-tools", "Grep,Glob", "-p", "go"}, replies: globPy, check: globRefused(true)},
		{name: "no --disallowedTools", args: []string{"-p", "go"}, replies: globPy, check: globRefused(false)},

		// Flags with one value.
		{name: "--max-turns N", args: []string{"-p", "go", "--max-turns", "1", "--output-format", "json"}, replies: touchAB, code: 1, check: func(t *testing.T, r parityRun) {
			if res := resultJSON(t, r.stdout); res["subtype"] != "error_max_turns" {
				t.Errorf("result %v", res)
			}
		}},
		{name: "--max-turns=N", args: []string{"-p", "go", "--max-turns=1", "--output-format=json"}, replies: touchAB, code: 1, check: func(t *testing.T, r parityRun) {
			if res := resultJSON(t, r.stdout); res["subtype"] != "error_max_turns" {
				t.Errorf("result %v", res)
			}
		}},
		{name: "--max-turns abc", args: []string{"-p", "go", "--max-turns", "abc"}, code: 2, stderr: "max-turns"},
		{name: "--model M", args: []string{"--model", "claude-test-1", "-p", "hi"}, check: func(t *testing.T, r parityRun) {
			if m := r.last(t).Params.Model; m != "claude-test-1" {
				t.Errorf("model %q", m)
			}
		}},
		{name: "--model=M", args: []string{"--model=claude-test-2", "-p", "hi"}, check: func(t *testing.T, r parityRun) {
			if m := r.last(t).Params.Model; m != "claude-test-2" {
				t.Errorf("model %q", m)
			}
		}},
		{name: "--model without a value", args: []string{"-p", "hi", "--model"}, code: 2, stderr: "needs an argument"},
		{name: "--permission-mode acceptEdits", args: []string{"--permission-mode", "acceptEdits", "-p", "go"}, replies: writeA, check: touched("a.txt")},
		{name: "--permission-mode=default", args: []string{"--permission-mode=default", "-p", "go"}, replies: writeA, check: touched()},
		{name: "--permission-mode dontAsk", args: []string{"--permission-mode", "dontAsk", "-p", "go", "--allowedTools", "Bash(touch b.txt)"}, replies: touchAB, check: touched("b.txt")},
		{name: "--dangerously-skip-permissions", args: []string{"--dangerously-skip-permissions", "-p", "go"}, replies: touchAB, check: touched("a.txt", "b.txt")},
		{name: "--dangerously-skip-permissions with another mode", args: []string{"--dangerously-skip-permissions", "--permission-mode", "plan", "-p", "go"}, code: 2, stderr: "cannot go with --permission-mode plan"},
		{name: "--permission-mode bad", args: []string{"--permission-mode", "yolo", "-p", "go"}, code: 2, stderr: "bypassPermissions, dontAsk"},
		{name: "--append-system-prompt", args: []string{"--append-system-prompt", "Answer in French.", "-p", "hi"}, check: systemEndsWith("Answer in French.")},
		{name: "--append-system-prompt with a dash value", args: []string{"-p", "hi", "--append-system-prompt", "-r"}, check: all(fresh("hi"), systemEndsWith("-r"))},
		{name: "--output-format stream-json --verbose", args: []string{"-p", "hi", "--output-format", "stream-json", "--verbose"}, check: func(t *testing.T, r parityRun) {
			var first map[string]any
			_ = json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &first)
			if first["type"] != "system" || first["subtype"] != "init" || resultJSON(t, r.stdout)["result"] != "OK" {
				t.Errorf("stdout %q", r.stdout)
			}
		}},
		{name: "--output-format=json", args: []string{"-p", "hi", "--output-format=json"}, check: func(t *testing.T, r parityRun) {
			if strings.Count(r.stdout, "\n") != 1 || resultJSON(t, r.stdout)["is_error"] != false {
				t.Errorf("stdout %q", r.stdout)
			}
		}},
		{name: "--output-format bad", args: []string{"-p", "hi", "--output-format", "yaml"}, code: 2, stderr: "text, json or stream-json"},

		// What cairn lacks, and its own flags.
		{name: "--version", args: []string{"--version"}, check: func(t *testing.T, r parityRun) {
			if !regexp.MustCompile(`^cairn \d+\.\d+\.\d+\n$`).MatchString(r.stdout) {
				t.Errorf("stdout %q", r.stdout)
			}
		}},
		{name: "-v", args: []string{"-v"}, check: func(t *testing.T, r parityRun) {
			if !strings.HasPrefix(r.stdout, "cairn ") {
				t.Errorf("stdout %q", r.stdout)
			}
		}},
		{name: "a Claude Code flag cairn lacks", args: []string{"-p", "hi", "--teleport"}, code: 2, stderr: "--teleport is a Claude Code flag that cairn does not have"},
		{name: "a Claude Code shorthand cairn lacks", args: []string{"-w", "-p", "hi"}, code: 2, stderr: "-w (--worktree) is a Claude Code flag"},
		{name: "an unknown flag", args: []string{"-p", "hi", "--no-such-flag"}, code: 2, stderr: "unknown flag: --no-such-flag"},
		{name: "an unknown subcommand", args: []string{"sessions", "frobnicate"}, code: 2, stderr: `"frobnicate" is not a command of cairn sessions`},
		{name: "--help", args: []string{"--help"}, check: func(t *testing.T, r parityRun) {
			if strings.ContainsRune(r.stdout, 0) || !strings.Contains(r.stdout, "-r, --resume ID") {
				t.Errorf("help:\n%q", r.stdout)
			}
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			p := newProject(t)
			t.Setenv("HOME", p.home)
			if code, _, errOut := p.run(t, "", "-p", "first"); code != 0 {
				t.Fatalf("seed: exit %d, %s", code, errOut)
			}
			ids := p.sessionIDs(t)
			if len(ids) != 1 {
				t.Fatalf("seed sessions %v", ids)
			}
			seed := ids[0]
			args := make([]string, len(row.args))
			for i, a := range row.args {
				a = strings.ReplaceAll(a, "PREFIX", seed[:8])
				args[i] = strings.ReplaceAll(a, "ID", seed)
			}
			before := len(p.srv.Requests())
			for _, reply := range row.replies {
				for i, b := range reply.Content {
					if b.Type == model.BlockToolUse {
						reply.Content = append([]model.Block(nil), reply.Content...)
						reply.Content[i].Input = json.RawMessage(strings.ReplaceAll(string(b.Input), "PROJECT", p.dir))
					}
				}
				p.srv.Enqueue(reply)
			}
			code, out, errOut := p.run(t, "", args...)
			if code != row.code || !strings.Contains(errOut, row.stderr) {
				t.Fatalf("cairn %q: exit %d, want %d; stderr %q, want it to hold %q", args, code, row.code, errOut, row.stderr)
			}
			if row.check != nil {
				row.check(t, parityRun{code: code, stdout: out, stderr: errOut, p: p, seed: seed, reqs: p.srv.Requests()[before:]})
			}
		})
	}
}

// systemEndsWith checks the end of the system prompt sent.
func systemEndsWith(want string) func(*testing.T, parityRun) {
	return func(t *testing.T, r parityRun) {
		t.Helper()
		sys := r.last(t).Params.System
		if len(sys) == 0 || !strings.HasSuffix(strings.TrimSpace(sys[len(sys)-1].Text), want) {
			t.Errorf("the system prompt does not end with %q", want)
		}
	}
}
