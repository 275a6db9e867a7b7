package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// A custom command is offered by the completion menu with its
// description, completed with tab, listed by /help, and sent to the
// session expanded when typed with its arguments.
func TestCustomCommandInTheUI(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	cmd := filepath.Join(r.dir, ".claude/commands/review.md")
	if err := os.MkdirAll(filepath.Dir(cmd), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cmd, []byte("---\ndescription: Review a file for bugs\nargument-hint: <file>\n---\nReview $ARGUMENTS now.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := extension.Load(extension.Options{ProjectDir: r.dir, CairnHome: r.home.Dir})
	m, err := anthropic.New(anthropic.Config{BaseURL: r.srv.URL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := agent.Open(t.Context(), agent.Options{
		Home: r.home, Cwd: r.dir, Model: m, ModelName: "claude-sonnet-4-5", MaxTokens: 4000, Window: r.window,
		Tools: tools.Core(), Entrypoint: "cli", Now: clock, NewUUID: r.uuid, Extensions: set,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := r.options(s)
	opts.Commands = []tui.Command{{Name: "review", Args: "<file>", Help: "Review a file for bugs"}}
	d := start(t, opts)
	d.waitFor("to auto-compact")

	d.typeText("/rev")
	d.waitUntil("the command in the completion menu", func(f string) bool {
		for _, line := range strings.Split(f, "\n") {
			if strings.Contains(line, "/review <file>") && strings.Contains(line, "Review a file for bugs") {
				return true
			}
		}
		return false
	})
	d.press("tab")
	d.typeText("hello.py")
	d.waitFor("> /review hello.py")
	r.srv.Enqueue(modeltest.Text("Reviewed hello.py."))
	d.press("enter")
	d.waitFor("Reviewed hello.py.")
	msgs := r.srv.Last().Params.Messages
	var texts []string
	for _, b := range msgs[len(msgs)-1].Content {
		texts = append(texts, b.Text)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "<command-name>/review</command-name>") || !strings.Contains(all, "Review hello.py now.") {
		t.Errorf("the request does not carry the expanded command:\n%s", all)
	}

	d.typeText("/help")
	d.press("enter")
	d.waitFor("Custom commands and skills")
	d.waitFor("/review <file>")
}
