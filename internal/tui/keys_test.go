package tui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/history"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model/modeltest"
)

func TestEscInterruptsCleanly(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	r := newRig(t, modeltest.Config{})
	slow := modeltest.Text("I will take a very long time to answer this question, as you will see.")
	slow.Hold, slow.HoldAfter = hold, 4
	r.srv.Enqueue(slow, modeltest.Text("Fresh answer."))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("think hard")
	d.press("enter")
	d.waitFor("I will take") // the model is streaming
	d.press("esc")
	d.waitFor("Interrupted")
	h := d.m.Session().History()
	if last := h[len(h)-1]; last.Text() != engine.InterruptedText {
		t.Errorf("the conversation ends with %q, want the interruption marker", last.Text())
	}
	// The session goes on.
	d.typeText("again")
	d.press("enter")
	d.waitFor("Fresh answer.")
}

func TestPromptHistoryAndMultiline(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("first line")
	d.press("shift+enter")
	d.typeText("second line")
	d.press("enter")
	d.waitUntil("the reply", func(f string) bool { return strings.Contains(f, "● OK") && !strings.Contains(f, "esc to") })
	if body := string(r.srv.Last().Body); !strings.Contains(body, `first line\nsecond line`) {
		t.Errorf("the two lines were not sent as one message: %s", body)
	}
	big := strings.Repeat("a long pasted line of text\n", 60)
	d.tm.Send(tea.PasteMsg{Content: big})
	d.press("enter")
	d.waitUntil("the second reply", func(f string) bool { return strings.Count(f, "● OK") == 2 && !strings.Contains(f, "esc to") })
	if body := string(r.srv.Last().Body); strings.Count(body, "a long pasted line") != 60 {
		t.Error("the paste was not sent whole")
	}
	// The transcript shows the prompts too: look at the prompt box only.
	// ↑ puts the cursor at the start of the prompt brought back, so ↓
	// first walks its lines, then goes to the newer prompt.
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"up", []string{"> [Pasted text #1 +60 lines]"}},
		{"up", []string{"> first line", "  second line"}},
		{"down", []string{"> first line", "  second line"}},
		{"down", []string{"> [Pasted text #1 +60 lines]"}},
	} {
		d.press(c.key)
		if d := cmp.Diff(c.want, promptBox(d.frame())); d != "" {
			t.Errorf("the prompt box after %s (-want +got):\n%s", c.key, d)
		}
	}

	// history.jsonl has both prompts, the long paste by its hash. The UI
	// adds a prompt to it in a command of its own, which may run after the
	// turn's reply is on the screen: wait for it.
	var entries []history.Entry
	for deadline := time.Now().Add(15 * time.Second); ; {
		entries, err = r.hist.Read(t.Context(), r.dir, s.ID(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // nothing to wait on but the file
	}
	if len(entries) != 2 || entries[0].Display != "[Pasted text #1 +60 lines]" || entries[1].Display != "first line\nsecond line" {
		t.Fatalf("history = %+v", entries)
	}
	if p := entries[0].Pasted[1]; p.Content != big || p.ContentHash == "" {
		t.Errorf("the paste was not kept by hash: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(r.home.Dir, "paste-cache", history.HashPaste(big)+".txt")); err != nil {
		t.Error(err)
	}
}

// promptBox is the prompt box's lines in frame (between the last two
// rules), without the blank ones.
func promptBox(frame string) []string {
	lines := strings.Split(frame, "\n")
	var rules []int
	for i, l := range lines {
		if strings.HasPrefix(l, "───") {
			rules = append(rules, i)
		}
	}
	if len(rules) < 2 {
		return nil
	}
	var box []string
	for _, l := range lines[rules[len(rules)-2]+1 : rules[len(rules)-1]] {
		if strings.TrimSpace(l) != "" {
			box = append(box, l)
		}
	}
	return box
}

func TestCtrlCClearsThenExits(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("half a thought")
	d.waitFor("> half a thought")
	d.press("ctrl+c")
	f := d.waitFor("Press Ctrl+C again to exit")
	if strings.Contains(f, "half a thought") {
		t.Errorf("Ctrl+C did not clear the prompt:\n%s", f)
	}
	d.press("ctrl+c")
	d.tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

func TestSlashCommands(t *testing.T) {
	var more atomic.Int64
	r := newRig(t, modeltest.Config{Respond: func(req *modeltest.Request) modeltest.Reply {
		if strings.Contains(string(req.Body), "<summary>") {
			return modeltest.Text("<summary>We said hello.</summary>")
		}
		if strings.Contains(string(req.Body), "tell me more") {
			return modeltest.Text("More. " + strings.Repeat("Filler words. ", 900) + fmt.Sprintf("END-%d", more.Add(1)-1))
		}
		return modeltest.Text("Hello there.")
	}, DeltaBytes: 4096}) // the long answers in a few deltas
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	for _, c := range []struct{ cmd, want string }{
		{"/help", "exit cairn (also /quit)"},
		{"/summary", "Session memory is not available"},
		{"/cost", "Total cost:"},
		{"/nope", "Unknown command /nope"},
	} {
		d.typeText(c.cmd)
		d.press("enter")
		d.waitFor(c.want)
	}
	d.typeText("hello")
	d.press("enter")
	d.waitUntil("the reply", func(f string) bool { return strings.Contains(f, "Hello there.") && !strings.Contains(f, "esc to") })
	d.typeText("/pin always answer in French")
	d.press("enter")
	d.waitFor("Pinned for the rest of the session")
	// A conversation this short is smaller than its summary: nothing is done.
	d.typeText("/compact keep it short")
	d.press("enter")
	d.waitFor("Not compacted: the conversation holds about")
	// Once it is longer, the compaction frees room.
	for i := range 5 {
		d.typeText(fmt.Sprintf("tell me more %d", i))
		d.press("enter")
		d.waitUntil("the reply", func(f string) bool {
			return strings.Contains(f, fmt.Sprintf("END-%d", i)) && !strings.Contains(f, "esc to")
		})
	}
	d.typeText("/compact keep it short")
	d.press("enter")
	f := d.waitFor("Conversation compacted (manual)")
	if !strings.Contains(f, "tokens") {
		t.Errorf("the compaction does not say what it did:\n%s", f)
	}
	d.typeText("/clear")
	d.press("enter")
	f = d.waitFor("Started a new session.")
	if strings.Contains(f, "Hello there.") {
		t.Errorf("/clear kept the old conversation on screen:\n%s", f)
	}
}

// TestCommandTypedWhileClearing: a command typed while /clear opens the
// new session waits for it and runs in the new session, instead of
// being wiped off the screen with the old conversation.
func TestCommandTypedWhileClearing(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts := r.options(s)
	release := make(chan struct{})
	opts.Open = func(ctx context.Context, ref string) (tui.Session, error) {
		select { // the new session opens when the test says so
		case <-release:
			return r.open(ctx, ref)
		case <-t.Context().Done():
			return nil, t.Context().Err()
		}
	}
	d := start(t, opts)
	d.waitFor("to auto-compact")
	d.typeText("/clear")
	d.press("enter")
	d.waitFor("Opening…")
	d.typeText("/cost")
	d.press("enter")
	d.waitFor("queued: /cost")
	close(release)
	f := d.waitFor("Total cost:")
	cleared, cost := strings.Index(f, "Started a new session."), strings.Index(f, "> /cost")
	if cleared < 0 || cost < cleared || strings.Contains(f, "waits for the session") || strings.Contains(f, "queued:") {
		t.Errorf("/cost typed while /clear ran does not follow the new session:\n%s", f)
	}
}

// TestEscEscOpensRewind: two Escs on an empty prompt open the rewind
// list, which holds the prompts typed, not the commands.
func TestEscEscOpensRewind(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.srv.Enqueue(modeltest.Text("One."))
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("typed prompt")
	d.press("enter")
	d.waitUntil("the reply", func(f string) bool { return strings.Contains(f, "One.") && !strings.Contains(f, "esc to") })
	d.typeText("/cost")
	d.press("enter")
	d.waitFor("Total cost:")
	d.press("esc", "esc")
	f := d.waitFor("pick the message to go back to before")
	if !strings.Contains(f, "❯ typed prompt") || strings.Contains(f, "/cost") {
		t.Errorf("the rewind list:\n%s", f)
	}
	d.press("esc")
	d.waitFor("Total cost:")
}

// TestTabCompletesPaths: after "@", Tab completes a file or folder of the
// working directory, leaving out what .gitignore ignores.
func TestTabCompletesPaths(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	for name, body := range map[string]string{"src/main.go": "package main\n", "src/mainly.txt": "x\n", "build/out.bin": "x\n", ".gitignore": "build/\n*.log\n", "debug.log": "x\n"} {
		os.MkdirAll(filepath.Join(r.dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(r.dir, ".git"), 0o755)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("look at @")
	f := d.waitFor("@src/")
	for _, hidden := range []string{"@build/", "@debug.log", "@.git"} {
		if strings.Contains(f, hidden) {
			t.Errorf("the menu offers %s, which is ignored:\n%s", hidden, f)
		}
	}
	if !strings.Contains(f, "@hello.py") {
		t.Errorf("the menu lacks hello.py:\n%s", f)
	}
	d.typeText("sr")
	d.press("tab")
	d.waitFor("> look at @src/")
	d.typeText("main.")
	d.press("tab")
	d.waitFor("> look at @src/main.go")
}

// TestTabCompletesCommands: Tab completes a slash command, the session's
// custom commands and skills with their descriptions in the menu.
func TestTabCompletesCommands(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts := r.options(s)
	opts.Commands = []tui.Command{{Name: "review", Args: "<file>", Help: "review a file"}, {Name: "deploy-notes", Help: "write deploy notes", Skill: true}}
	d := start(t, opts)
	d.waitFor("to auto-compact")
	d.typeText("/re")
	f := d.waitFor("/review <file>")
	for _, want := range []string{"/rename <name>", "/resume", "review a file"} {
		if !strings.Contains(f, want) {
			t.Errorf("the menu lacks %q:\n%s", want, f)
		}
	}
	d.typeText("v")
	d.press("tab")
	d.waitFor("> /review")
	d.press("ctrl+c")
	d.typeText("/dep")
	d.waitFor("write deploy notes (skill)")
	d.press("tab")
	d.waitFor("> /deploy-notes")
}
