package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

var uiCount atomic.Int64

// startUI starts `cairn args…` in the project in a tmux terminal of
// width×height cells (the test skips without tmux) and ends it with the
// test. extraEnv is more of cairn's environment.
func (p *project) startUI(t *testing.T, width, height int, extraEnv []string, args ...string) tmux {
	t.Helper()
	proctest.Command(t, "tmux", "apt-get install tmux")
	name := fmt.Sprintf("cairn-%s-%d-%d", regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"), os.Getpid(), uiCount.Add(1))
	x := tmux{t: t, name: name}
	env := append(append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "TERM=xterm-256color"}, p.env...), extraEnv...)
	script := fmt.Sprintf("cd %q && env -i PATH=%q %s %q %s; echo cairn-exited-$?; sleep 60", p.dir, os.Getenv("PATH"), strings.Join(quoteAll(env), " "), binary, strings.Join(quoteAll(args), " "))
	x.run("new-session", "-d", "-s", x.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), script)
	t.Cleanup(func() { exec.Command("tmux", "-L", x.name, "kill-server").Run() })
	return x
}

// typeKeys types text (literally) then presses each of the named keys.
func (x tmux) typeKeys(text string, named ...string) {
	x.t.Helper()
	if text != "" {
		x.run("send-keys", "-t", x.name, "-l", text)
	}
	for _, k := range named {
		x.run("send-keys", "-t", x.name, k)
	}
}

// TestTodoChecklistInTerminal: in the real binary, a TodoWrite call shows
// as a checklist, kept above the prompt; resuming the session brings the
// list back there.
func TestTodoChecklistInTerminal(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "TodoWrite", `{"todos":[`+
			`{"content":"Read the parser","activeForm":"Reading the parser","status":"in_progress"},`+
			`{"content":"Run the tests","activeForm":"Running the tests","status":"pending"}]}`)}},
		modeltest.Text("Started on it."),
	)
	x := p.startUI(t, 100, 30, nil)
	x.waitFor("Welcome to cairn")
	x.typeKeys("fix the parser", "Enter")
	s := x.waitFor("Started on it.")
	for _, want := range []string{"Update Todos", "⎿  ◼ Read the parser", "☐ Run the tests", "  Todos"} {
		if !strings.Contains(s, want) {
			t.Errorf("the screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Todos have been modified") {
		t.Errorf("the text meant for the model is shown:\n%s", s)
	}
	x.typeKeys("", "C-c", "C-c")
	x.waitFor("cairn-exited-0")

	y := p.startUI(t, 100, 30, nil, "-c")
	s = y.waitFor("Started on it.")
	if got := pinnedTodos(s); got != "Todos\n◼ Read the parser\n☐ Run the tests" {
		t.Errorf("after -c the list above the prompt is %q:\n%s", got, s)
	}
}

// pinnedTodos is the todo list between the transcript and the prompt's
// top rule, its lines trimmed.
func pinnedTodos(screen string) string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "Todos":
			in, out = true, []string{l}
		case in && strings.HasPrefix(l, "───"):
			return strings.Join(out, "\n")
		case in:
			out = append(out, l)
		}
	}
	return ""
}

// TestPermissionsNameSources: /permissions says where each rule comes
// from — the settings file and line, the flag, cairn itself (its memory
// folder: never "--allowedTools"), or this session's "don't ask again".
func TestPermissionsNameSources(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude", "settings.json"), "{\n  \"permissions\": {\n    \"allow\": [\"Bash(make:*)\"]\n  }\n}\n")
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"touch made.txt"}`)}},
		modeltest.Text("Said hi."),
	)
	x := p.startUI(t, 250, 60, nil, "--allowedTools", "Bash(go vet:*)")
	x.waitFor("Welcome to cairn")
	x.typeKeys("say hi", "Enter")
	x.waitFor("Do you want to proceed?")
	x.typeKeys("2")
	x.waitFor("Said hi.")
	x.typeKeys("/permissions", "Enter")
	s := x.waitFor("Deny (")
	rows := map[string]string{}
	row := regexp.MustCompile(`^\s+(\w+\(.*?\))\s+(\S.*?)\s*$`)
	for _, l := range strings.Split(s, "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			rows[m[1]] = m[2]
		}
	}
	settingsFile := filepath.Join(p.dir, ".claude", "settings.json")
	for rule, want := range map[string]string{
		"Bash(make:*)":         settingsFile + " line 3",
		"Bash(touch made.txt)": `this session ("don't ask again"; saved to ` + filepath.Join(p.dir, ".cairn", "settings.local.json") + ")",
		"Bash(go vet:*)":       "--allowedTools",
	} {
		if got := rows[rule]; got != want {
			t.Errorf("%s: source %q, want %q\n%s", rule, got, want, s)
		}
	}
	memory := 0
	for rule, src := range rows {
		if strings.Contains(rule, "/memory/") {
			memory++
			if src != "cairn: the long-term memory folder" {
				t.Errorf("%s: source %q, want cairn's own", rule, src)
			}
		}
	}
	if memory == 0 {
		t.Errorf("the memory folder's rules are not listed:\n%s", s)
	}
}

// TestThemes: NO_COLOR leaves every colour out (emphasis stays); the
// settings' "theme": "light" draws the reply in the light style; and a
// backslash before Enter starts a new line of the prompt.
func TestThemes(t *testing.T) {
	sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	colours := func(screen string) (fg []string) {
		for _, seq := range sgr.FindAllString(screen, -1) {
			if strings.Contains(seq, "38;") || strings.Contains(seq, "48;") || regexp.MustCompile(`[\[;](3|4|9|10)[0-7]m`).MatchString(seq) {
				fg = append(fg, seq)
			}
		}
		return fg
	}
	t.Run("NO_COLOR", func(t *testing.T) {
		p := newProject(t)
		p.srv.Enqueue(modeltest.Text("A **bold** answer."))
		x := p.startUI(t, 100, 30, []string{"NO_COLOR=1"})
		x.waitFor("Welcome to cairn")
		x.typeKeys("first line\\", "Enter")
		x.typeKeys("second line", "Enter")
		x.waitFor("bold answer")
		s := x.run("capture-pane", "-p", "-e", "-t", x.name)
		if c := colours(s); len(c) > 0 {
			t.Errorf("NO_COLOR: the screen has colours %q:\n%s", c, s)
		}
		if !strings.Contains(s, "\x1b[1m") {
			t.Errorf("NO_COLOR: no bold left:\n%q", s)
		}
		if body := string(p.srv.Last().Body); !strings.Contains(body, `first line\nsecond line`) {
			t.Errorf("the backslash did not start a new line: %s", body)
		}
	})
	t.Run("light", func(t *testing.T) {
		p := newProject(t)
		put(t, filepath.Join(p.dir, ".claude", "settings.json"), `{"theme": "light"}`)
		p.srv.Enqueue(modeltest.Text("A plain answer."))
		x := p.startUI(t, 100, 30, nil)
		x.waitFor("Welcome to cairn")
		x.typeKeys("hello", "Enter")
		x.waitFor("plain answer")
		s := x.run("capture-pane", "-p", "-e", "-t", x.name)
		// The light style writes text in colour 234, the dark one in 252.
		if !strings.Contains(s, "38;5;234") || strings.Contains(s, "38;5;252") {
			t.Errorf("the reply is not in the light style:\n%q", s)
		}
	})
}

// TestTableInListInTerminal: in the real binary, a table inside a list
// item is as wide as its content (as a top-level table is), not the
// terminal's 120 columns, and stays under its item.
func TestTableInListInTerminal(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("Steps:\n\n1. Count the files:\n\n   | file | lines |\n   |---|--:|\n   | hello.py | 2 |\n\n2. Done counting.\n\nAll done."))
	x := p.startUI(t, 120, 30, nil)
	x.waitFor("Welcome to cairn")
	x.typeKeys("count", "Enter")
	s := x.waitFor("All done.")
	lines := strings.Split(s, "\n")
	item := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "1. Count the files:") })
	rule := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "┼") })
	if item < 0 || rule < 0 {
		t.Fatalf("no list item or table rule on the screen:\n%s", s)
	}
	if got := strings.TrimSpace(lines[rule]); got != "──────────┼───────" {
		t.Errorf("the table's rule is %q (%d columns), want it as wide as the cells:\n%s", got, len([]rune(got)), s)
	}
	if rule != item+2 || !strings.Contains(lines[item+1], "file") || !strings.Contains(lines[rule+1], "hello.py") {
		t.Errorf("the table is not under its list item:\n%s", s)
	}
	if !strings.Contains(s, "2. Done counting.") {
		t.Errorf("the list's next item is lost:\n%s", s)
	}
}
