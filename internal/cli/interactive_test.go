package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
)

func TestAskingGate(t *testing.T) {
	project := t.TempDir()
	checker, err := permission.New(permission.Options{CairnHome: t.TempDir(), ProjectDir: project, Cwd: project})
	if err != nil {
		t.Fatal(err)
	}
	var questions []tui.Question
	answers := []tui.Answer{{Note: "use make clean"}, {Allow: true, Always: true, Rule: "Bash(make build)"}}
	ask := func(_ context.Context, q tui.Question) tui.Answer {
		questions = append(questions, q)
		a := answers[0]
		answers = answers[1:]
		return a
	}
	g := &askingGate{inner: gateWith(checker, &denials{}), checker: checker, ask: ask, project: project}
	bash := tools.Core()[0]
	call := func(cmd string) engine.Verdict {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return g.gate(context.Background(), bash, model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: in})
	}
	if v := call("rm -rf build"); v.Allow || !strings.Contains(v.Reason, "The user said: use make clean") {
		t.Errorf("refused with a note: %+v", v)
	}
	if v := call("make build"); !v.Allow || v.Record.(permission.Record).By != "user" {
		t.Errorf("allowed always: %+v", v)
	}
	if v := call("make build"); !v.Allow {
		t.Errorf("the rule added in this session did not apply: %+v", v)
	}
	if v := call("git status"); !v.Allow {
		t.Errorf("a read-only command asked: %+v", v)
	}
	if len(questions) != 2 || questions[0].Rule != "Bash(rm -rf build)" {
		t.Errorf("questions = %+v", questions)
	}
}

// TestDontAskAgainCompound: "Yes, and don't ask again" for a compound
// command saves one prefix rule per command, as Claude Code does; the same
// line is then allowed without a question, in this session and by a new
// process reading the settings file, which holds the rules unescaped.
func TestDontAskAgainCompound(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	checker, err := permission.New(permission.Options{CairnHome: home, ProjectDir: project, Cwd: project})
	if err != nil {
		t.Fatal(err)
	}
	var questions []tui.Question
	ask := func(_ context.Context, q tui.Question) tui.Answer {
		questions = append(questions, q)
		if err := tui.AddAllowRule(project, q.Rule); err != nil { // as the UI does on that answer
			t.Fatal(err)
		}
		return tui.Answer{Allow: true, Always: true, Rule: q.Rule}
	}
	g := &askingGate{inner: gateWith(checker, &denials{}), checker: checker, ask: ask, project: project}
	bash := tools.Core()[0]
	call := func(cmd string) engine.Verdict {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return g.gate(context.Background(), bash, model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: in})
	}
	const line = "cd sub && go vet ./... && go test -run TestX ./..."
	const fetch = "curl -s 'https://example.com/?a=1&b=2' && ls"
	for _, cmd := range []string{line, line, fetch, fetch} {
		if v := call(cmd); !v.Allow {
			t.Errorf("%s: %+v", cmd, v)
		}
	}
	var rules []string
	for _, q := range questions {
		rules = append(rules, q.Rule)
	}
	if diff := cmp.Diff([]string{"Bash(go vet:*), Bash(go test:*)", "Bash(curl -s 'https://example.com/?a=1&b=2')"}, rules); diff != "" {
		t.Errorf("questions asked, rules offered (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(project, ".cairn", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"Bash(curl -s 'https://example.com/?a=1&b=2')"`) || strings.Contains(string(b), `\u0026`) {
		t.Errorf("settings file:\n%s", b)
	}
	// A new process reads the rules back and allows the line.
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "CAIRN_HOME" {
			return home
		}
		return ""
	}, Now: time.Now, Cwd: project}
	in, _ := json.Marshal(map[string]string{"command": "cd sub && go vet ./... && go test -run TestX ./..."})
	if code := Run(context.Background(), []string{"permissions", "check", "--tool", "Bash", "--input", string(in), "--json"}, env); code != 0 || !strings.Contains(out.String(), `"decision":"allow"`) {
		t.Errorf("permissions check: exit %d, %s%s", code, out.String(), errb.String())
	}
}

// TestDontAskModeNeverAsks: in the terminal UI too, dontAsk mode denies
// what would ask, without a question.
func TestDontAskModeNeverAsks(t *testing.T) {
	project := t.TempDir()
	checker, err := permission.New(permission.Options{CairnHome: t.TempDir(), ProjectDir: project, Cwd: project, Mode: permission.ModeDontAsk})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	ask := func(context.Context, tui.Question) tui.Answer { asked++; return tui.Answer{Allow: true} }
	g := &askingGate{inner: gateWith(checker, &denials{}), checker: checker, ask: ask, project: project}
	in, _ := json.Marshal(map[string]string{"command": "make build"})
	v := g.gate(context.Background(), tools.Core()[0], model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: in})
	if v.Allow || asked != 0 || !strings.Contains(v.Reason, "dontAsk") {
		t.Errorf("verdict %+v after %d questions", v, asked)
	}
}
