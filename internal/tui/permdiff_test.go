package tui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// TestEditPermissionDiff: the question about an Edit shows the diff the
// edit will make with the file's real line numbers and three lines of
// context around it — the same lines the diff after approval shows.
func TestEditPermissionDiff(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	path := filepath.Join(r.dir, "notes.txt")
	var lines []string
	for i := 1; i <= 12; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.asker = tui.NewAsker()
	r.gate = func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		if call.Name != "Edit" {
			return engine.Verdict{Allow: true}
		}
		ans := r.asker.Ask(ctx, tui.Question{Tool: call.Name, Input: call.Input, Reason: "Editing a file needs permission."})
		return engine.Verdict{Allow: ans.Allow, Reason: "The user refused."}
	}
	r.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_0", "Read", `{"file_path":"`+path+`"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Edit", `{"file_path":"`+path+`","old_string":"line 7","new_string":"line seven"}`)}},
		modeltest.Text("Renamed line 7."),
	)
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, r.options(s))
	d.waitFor("to auto-compact")
	d.typeText("spell out line 7")
	d.press("enter")
	// The question and the call's line come from two goroutines (the
	// permission gate, the turn's events), in either order: the frame
	// compared is the one showing both.
	asked := d.waitUntil("the question under its call", func(f string) bool {
		return strings.Contains(f, "Do you want to proceed?") && strings.Contains(f, "Edit(notes.txt)")
	})
	golden(t, "permission_edit", asked)
	want := []string{"4   line 4", "5   line 5", "6   line 6", "7 - line 7", "7 + line seven", "8   line 8", "9   line 9", "10   line 10"}
	if diff := cmp.Diff(want, diffLines(asked)); diff != "" {
		t.Errorf("the question's diff (-want +got):\n%s", diff)
	}
	d.press("1")
	done := d.waitUntil("the end of the turn", func(f string) bool {
		return strings.Contains(f, "Renamed line 7.") && !strings.Contains(f, "esc to interrupt")
	})
	if diff := cmp.Diff(want, diffLines(done)); diff != "" {
		t.Errorf("the diff after approval is not the question's (-question +after):\n%s", diff)
	}
}

// diffLines are a frame's diff lines: a line number, a mark and the text,
// the spaces between them squeezed.
func diffLines(frame string) []string {
	re := regexp.MustCompile(`^[│ ]*\s+(\d+) ([-+ ]) (line .*?)\s*│?\s*$`)
	var out []string
	for _, l := range strings.Split(frame, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+" "+m[2]+" "+m[3])
		}
	}
	return out
}

// TestSpinnerStopsWhileAsking: the spinner's clock stands still while a
// permission question waits for the person, and goes on from there once
// it is answered.
func TestSpinnerStopsWhileAsking(t *testing.T) {
	r := newRig(t, modeltest.Config{})
	r.gate = askBash(r)
	hold := make(chan struct{})
	last := modeltest.Text("Cleaned.")
	last.Hold = hold
	r.srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"echo cleaned"}`)}}, last)
	var offset atomic.Int64
	s, err := r.open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	o := r.options(s)
	o.Now = func() time.Time { return epoch.Add(time.Duration(offset.Load())) }
	d := start(t, o)
	d.waitFor("to auto-compact")
	d.typeText("clean up")
	d.press("enter")
	d.waitFor("Do you want to proceed?")
	offset.Store(int64(40 * time.Second))
	if f := d.waitFor("Waiting for your answer"); !strings.Contains(f, "Waiting for your answer… (0s") {
		t.Errorf("the clock counts while the question waits:\n%s", f)
	}
	d.press("1")
	d.waitFor("echo cleaned")
	offset.Store(int64(45 * time.Second))
	if f := d.waitFor("Working…"); !strings.Contains(f, "Working… (5s") {
		t.Errorf("after the answer the clock does not go on from where it stopped (5s):\n%s", f)
	}
	close(hold)
	d.waitFor("Cleaned.")
}
