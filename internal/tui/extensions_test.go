package tui_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		Tools: tools.Core(), Entrypoint: "cli", Now: clock, NewUUID: r.uuid, Extensions: agent.ExtensionOptions{Set: set},
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

// rawFrame is the screen with its colours.
func (d *driver) rawFrame() string {
	p := probe{reply: make(chan string, 1)}
	d.tm.Send(p)
	select {
	case s := <-p.reply:
		return s
	case <-time.After(10 * time.Second):
		d.t.Fatal("the program did not answer")
		return ""
	}
}

// The status line shows the first line of its command's output, colours
// kept, under the footer; it gets the session's JSON; a command that
// hangs never holds the UI up.
func TestStatusLine(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	inputs := make(chan []byte, 100)
	opts := r.options(s)
	opts.StatusLine = func(ctx context.Context, input []byte) (string, error) {
		inputs <- input
		return "\x1b[32mon main\x1b[0m · all good\nsecond line\n", nil
	}
	d := start(t, opts)
	d.waitFor("on main · all good")
	if f := d.frame(); strings.Contains(f, "second line") {
		t.Errorf("more than the first line shown:\n%s", f)
	}
	if raw := d.rawFrame(); !strings.Contains(raw, "\x1b[32mon main\x1b[0m") {
		t.Errorf("the colours were not kept: %q", raw)
	}
	var in tui.StatusInput
	if err := json.Unmarshal(<-inputs, &in); err != nil {
		t.Fatal(err)
	}
	if in.SessionID != s.ID() || in.Model.ID != "claude-sonnet-4-5" || in.Workspace.ProjectDir != r.dir {
		t.Errorf("status line input %+v", in)
	}

	// A command that hangs: the UI goes on.
	s2, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts = r.options(s2)
	opts.StatusLine = func(ctx context.Context, _ []byte) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	d2 := start(t, opts)
	d2.waitFor("to auto-compact")
	d2.typeText("still typing")
	d2.waitFor("> still typing")
}
