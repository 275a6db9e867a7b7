package tui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// askBash is a gate that asks the person about every Bash call, as the
// permission checker does in default mode.
func askBash(r *rig) func(context.Context, tool.Tool, model.Block) engine.Verdict {
	r.asker = tui.NewAsker()
	return func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		if call.Name != "Bash" {
			return engine.Verdict{Allow: true}
		}
		ans := r.asker.Ask(ctx, tui.Question{Tool: call.Name, Input: call.Input,
			Reason: "Running a command needs permission: Bash is not read-only.", Rule: tui.SuggestRule(t, call.Input, r.dir)})
		if ans.Allow {
			return engine.Verdict{Allow: true}
		}
		return engine.Verdict{Reason: "The user refused. They said: " + ans.Note}
	}
}

func TestPermissionPrompt(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.gate = askBash(r)
	r.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"rm -rf build","description":"Remove the build folder"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "Bash", `{"command":"echo cleaned"}`)}},
		modeltest.Text("Cleaned without deleting anything."),
	)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("clean the build")
	d.press("enter")
	golden(t, "permission", d.waitFor("Do you want to proceed?"))

	// No, with a note: the note is the refusal the model reads.
	d.press("3")
	d.waitFor("tell cairn what to do instead")
	d.typeText("use git clean instead")
	d.press("enter")
	// Yes, and don't ask again: the rule goes to the local settings.
	d.waitFor("echo cleaned")
	d.press("2")
	d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "Cleaned without deleting") && !strings.Contains(f, "esc to interrupt")
	})
	reqs := r.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if body := string(reqs[1].Body); !strings.Contains(body, "use git clean instead") {
		t.Errorf("the refusal's note did not reach the model: %s", body)
	}
	b, err := os.ReadFile(tui.LocalSettings(r.dir))
	if err != nil || !strings.Contains(string(b), `"Bash(echo cleaned)"`) {
		t.Errorf("settings.local.json = %s (%v), want the rule Bash(echo cleaned)", b, err)
	}
}

func TestMeterNearThreshold(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	// Effective 22,000 tokens; auto-compaction at 9,000, warning at 2,000.
	r.window = tokens.Window{Size: 18_000, MaxOutput: 8_000} // compacts at 9,001 (reserves scaled to half the window)
	r.srv.Enqueue(modeltest.Text("That is a long log; the failures are all timeouts."))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	var log strings.Builder
	for i := range 300 {
		log.WriteString(strings.Repeat("x", 40) + " line " + string(rune('a'+i%26)) + "\n")
	}
	d.typeText("why does this fail? ")
	d.tm.Send(tea.PasteMsg{Content: log.String()})
	d.waitFor("[Pasted text #1 +300 lines]")
	d.press("enter")
	f := d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "all timeouts") && !strings.Contains(f, "esc to interrupt")
	})
	golden(t, "meter", f)
	used, err := d.m.Session().Used(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := tokensShort(r.window.AutoCompactAt() - used); !strings.Contains(f, want+" to auto-compact") {
		t.Errorf("the meter does not show the trigger's distance %s:\n%s", want, f)
	}
	// The model got the paste whole, the history keeps the placeholder.
	if body := string(r.srv.Last().Body); !strings.Contains(body, "line z") {
		t.Error("the pasted text was not sent")
	}
}

// tokensShort formats a count as the meter does: 725, 12.3k.
func tokensShort(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

func TestResumePicker(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.srv.Enqueue(modeltest.Text("Noted: bananas are berries."), modeltest.Text("Looking at the login test now."))
	ctx := t.Context()
	var paths []string
	for _, p := range []string{"tell me about bananas", "fix the flaky login test"} {
		s, err := r.open(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range s.Run(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(p, "login") {
			// A /rename name stands for the session in the picker.
			if err := s.Rename(ctx, "Login test repair"); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, s.Path())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range paths {
		at := epoch.Add(-time.Duration(3-i) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	s, err := r.open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("/resume")
	d.press("enter")
	golden(t, "resume", d.waitFor("Login test repair"))
	// Search reaches the content: "berries" is only in the replies.
	d.typeText("berries")
	f := d.waitUntil("the content match", func(f string) bool {
		return strings.Contains(f, "“") && !strings.Contains(f, "Login")
	})
	if !strings.Contains(f, "tell me about bananas") {
		t.Errorf("the search lost the session:\n%s", f)
	}
	d.press("enter")
	f = d.waitFor("Resumed session")
	if !strings.Contains(f, "bananas are berries") {
		t.Errorf("the resumed conversation is not shown:\n%s", f)
	}
	if got := d.m.Session().Path(); got != paths[0] {
		t.Errorf("resumed %s, want %s", got, paths[0])
	}
}

func TestRewindPreview(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	file := filepath.Join(r.dir, "hello.py")
	r.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_0", "Read", `{"file_path":"`+file+`"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Edit", `{"file_path":"`+file+`","old_string":"print('hello')","new_string":"print('bye')"}`)}},
		modeltest.Text("Changed."),
		modeltest.Text("Second answer."),
	)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("say bye")
	d.press("enter")
	d.waitUntil("the first turn", func(f string) bool { return strings.Contains(f, "Changed.") && !strings.Contains(f, "esc to") })
	d.typeText("and now?")
	d.press("enter")
	d.waitUntil("the second turn", func(f string) bool { return strings.Contains(f, "Second answer.") && !strings.Contains(f, "esc to") })
	d.typeText("/rewind")
	d.press("enter")
	d.waitFor("pick the message")
	d.press("down", "enter")
	golden(t, "rewind", d.waitFor("Files that will change"))
	d.press("enter")
	f := d.waitFor("Conversation rewound")
	if b, _ := os.ReadFile(file); string(b) != "print('hello')\n" {
		t.Errorf("hello.py = %q after the rewind", b)
	}
	if strings.Contains(f, "Second answer.") || !strings.Contains(f, "> say bye") {
		t.Errorf("the conversation was not rewound, or the prompt not put back:\n%s", f)
	}
	if n := len(d.m.Session().History()); n != 0 {
		t.Errorf("the history holds %d messages after rewinding to the first prompt", n)
	}
}
