package tui_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

func TestEmptySession(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	golden(t, "empty", d.waitFor("to auto-compact"))
}

func TestStreaming(t *testing.T) {
	hold := make(chan struct{})
	r := newRig(t, modeltest.Config{})
	reply := modeltest.Text("Here is the plan:\n\n1. Read `hello.py`\n2. Change the greeting\n\nThe change is **small** and safe; it touches one line of one file.")
	reply.Hold, reply.HoldAfter = hold, 8
	r.srv.Enqueue(reply)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("change the greeting")
	d.press("enter")
	golden(t, "streaming", d.waitFor("The change is **sm")) // where the stream is held
	close(hold)
	f := d.waitUntil("the finished reply", func(f string) bool {
		return strings.Contains(f, "one line of one file") && !strings.Contains(f, "esc to interrupt")
	})
	if !strings.Contains(f, "small") || strings.Contains(f, "**") {
		t.Errorf("the reply is not rendered as Markdown:\n%s", f)
	}
}

func TestToolCallWithDiff(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	read := modeltest.ToolUse("toolu_0", "Read", `{"file_path":"`+filepath.Join(r.dir, "hello.py")+`"}`)
	edit := modeltest.ToolUse("toolu_1", "Edit", `{"file_path":"`+filepath.Join(r.dir, "hello.py")+`","old_string":"print('hello')","new_string":"print('hello, world')\nprint('bye')"}`)
	r.srv.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("Let me look first."), read}},
		modeltest.Reply{Content: []model.Block{model.TextBlock("I'll change the greeting."), edit}},
		modeltest.Text("Done: the greeting now says hello, world."))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("greet the world")
	d.press("enter")
	f := d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "Done: the greeting") && !strings.Contains(f, "esc to interrupt")
	})
	golden(t, "tool_diff", f)
	b, _ := os.ReadFile(filepath.Join(r.dir, "hello.py"))
	if string(b) != "print('hello, world')\nprint('bye')\n" {
		t.Errorf("hello.py = %q", b)
	}
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
				var s string
				if json.Unmarshal(b.Content, &s) == nil {
					return s
				}
				return string(b.Content)
			}
		}
	}
	t.Fatal("no tool_result in the last request")
	return ""
}

// TestMarkdownReply: a reply's single newlines stay line breaks and its
// table is as wide as its content, not the whole screen.
func TestMarkdownReply(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.srv.Enqueue(modeltest.Text("Two files changed:\nhello.py and README.md.\n\n| file | lines |\n|---|--:|\n| hello.py | 2 |\n| README.md | 14 |\n\nAll done."))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("what changed")
	d.press("enter")
	f := d.waitUntil("the finished reply", func(f string) bool {
		return strings.Contains(f, "All done.") && !strings.Contains(f, "esc to interrupt")
	})
	golden(t, "markdown", f)
}

// listTableReply is a reply with tables inside list items, one of them
// in a nested list.
const listTableReply = "Two steps:\n\n1. Count the files:\n\n   | file | lines |\n   |---|--:|\n   | hello.py | 2 |\n\n2. Check the docs:\n   - README:\n\n     | part | ok |\n     |---|---|\n     | intro | yes |\n\nAll done."

// TestMarkdownTableInList: a table inside a list item is as wide as its
// content, as a top-level table is, and indented with its item.
func TestMarkdownTableInList(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.srv.Enqueue(modeltest.Text(listTableReply))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("what changed")
	d.press("enter")
	f := d.waitUntil("the finished reply", func(f string) bool {
		return strings.Contains(f, "All done.") && !strings.Contains(f, "esc to interrupt")
	})
	golden(t, "markdown_list_table", f)
}
