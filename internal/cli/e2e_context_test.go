package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// TestContextReportsLayers: after a manual compaction and a long output
// spilled to a file, `cairn context` counts the memory index, measures the
// preview rather than the output, and says what each layer freed.
func TestContextReportsLayers(t *testing.T) {
	p := newProject(t)
	var mu sync.Mutex
	counted := false
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case bytes.Contains(r.Body, []byte("<summary></summary>")):
			return modeltest.Text("<summary>THE-SUMMARY of the work so far.</summary>")
		case bytes.Contains(r.Body, []byte("count to a lot")) && !counted:
			counted = true
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"seq 1 30000"}`)}}
		}
		return modeltest.Text(longAnswer) // long enough for /compact to free room
	}})
	home := session.Home{Dir: p.home}
	dir := memory.Dir(home, p.dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := memory.WriteIndex(dir, "- [release](release.md) — the release branch is frozen until Friday\n"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-p", "first question"},
		{"-c", "-p", "/compact"},
		{"-c", "-p", "count to a lot", "--allowedTools", "Bash(seq:*)"},
	} {
		if code, _, e := p.cairn(t, args...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, e)
		}
	}
	infos, err := session.List(context.Background(), home, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v, %v", infos, err)
	}

	code, out, errOut := p.cairn(t, "context", infos[0].Path, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Used      int64
		Breakdown struct{ Memory, ToolResults int64 }
		Layers    struct {
			Offload    struct{ Count, TokensSaved int64 }
			Compaction *struct{ Trigger string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// seq 1 30000 prints 168,894 bytes: some 42,000 tokens.
	if o := rep.Layers.Offload; o.Count != 1 || o.TokensSaved < 35_000 || o.TokensSaved > 43_000 {
		t.Errorf("offload %+v, want one result of some 40,000 tokens saved", o)
	}
	if rep.Breakdown.ToolResults > 2_000 {
		t.Errorf("tool results count %d tokens: the output, not its preview", rep.Breakdown.ToolResults)
	}
	if want := memory.Prompt(dir); rep.Breakdown.Memory < int64(len(want))/5 {
		t.Errorf("memory counts %d tokens, for a section of %d bytes", rep.Breakdown.Memory, len(want))
	}
	if c := rep.Layers.Compaction; c == nil || c.Trigger != "manual" {
		t.Errorf("compaction %+v, want the manual one", c)
	}

	code, out, errOut = p.cairn(t, "context", infos[0].Path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Freed since the last compaction:", "Offloaded", "(1 result)", "Last compaction (manual):", "the compacted prefix cost"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Snipped") || strings.Contains(out, "Collapsed") {
		t.Errorf("the report names layers that did nothing:\n%s", out)
	}
}

// TestCollapseFromTheCommandLine: with CAIRN_CONTEXT_COLLAPSE=1 a long
// headless turn folds older spans into summaries instead of compacting,
// records the commit, and `cairn context` reports it.
func TestCollapseFromTheCommandLine(t *testing.T) {
	p := newProject(t)
	p.env = []string{"CAIRN_CONTEXT_COLLAPSE=1", "CAIRN_CONTEXT_WINDOW=40000"}
	part := regexp.MustCompile(`(\d+)\. from (?:the message|your response)`)
	var mu sync.Mutex
	steps := 0
	p.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 40_000, Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case bytes.Contains(r.Body, []byte("Write each summary as <fold n=")):
			var b strings.Builder
			for _, m := range part.FindAllSubmatch(r.Body, -1) {
				fmt.Fprintf(&b, "<fold n=\"%s\">FOLDED-%s: seq printed numbers.</fold>\n", m[1], m[1])
			}
			return modeltest.Text(b.String())
		case bytes.Contains(r.Body, []byte("<summary></summary>")):
			return modeltest.Text("<summary>THE-SUMMARY</summary>")
		case steps < 20:
			steps++
			return modeltest.Reply{Content: []model.Block{model.TextBlock(fmt.Sprintf("Step %d.", steps)),
				modeltest.ToolUse(fmt.Sprintf("toolu_%02d", steps), "Bash", fmt.Sprintf(`{"command":"seq %d 1000"}`, steps))}}
		}
		return modeltest.Text("all printed")
	}})
	code, out, errOut := p.cairn(t, "-p", "print the numbers, twenty times", "--model", "test-model", "--allowedTools", "Bash(seq:*)")
	if code != 0 || out != "all printed\n" {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
	data := p.transcript(t)
	if !bytes.Contains(data, []byte(`"subtype":"context_collapse_commit"`)) {
		t.Fatalf("no collapse commit in the transcript")
	}
	if bytes.Contains(data, []byte(`"subtype":"compact_boundary"`)) {
		t.Error("the session compacted: collapse should have kept it in bounds")
	}
	// The conversation's requests (not a fold's, not the session notes'
	// fork) carry the folds once they are committed. Which request is the
	// first to carry them depends on when the fold's answer lands (it is
	// asked beside the conversation), and a side request may come last, so
	// the check is that the folds reached the conversation at all.
	carried := false
	for _, r := range p.srv.Requests() {
		if !bytes.Contains(r.Body, []byte("Write each summary as <fold n=")) && !bytes.Contains(r.Body, []byte("cairn asks you to update")) &&
			bytes.Contains(r.Body, []byte("[Collapsed: FOLDED-")) {
			carried = true
		}
	}
	if !carried {
		t.Error("no request of the conversation carries the folds")
	}
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sessions %+v, %v", infos, err)
	}
	code, out, errOut = p.cairn(t, "context", infos[0].Path)
	if code != 0 || !strings.Contains(out, "Collapsed") {
		t.Errorf("exit %d: the report does not name the collapse:\n%s%s", code, out, errOut)
	}
}
