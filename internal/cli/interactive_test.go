package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
