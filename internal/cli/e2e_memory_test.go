package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// texts returns the text blocks of a request's messages, joined.
func texts(t *testing.T, r *modeltest.Request) string {
	t.Helper()
	if r.Params == nil {
		t.Fatal("the request did not decode")
	}
	var b strings.Builder
	for _, m := range r.Params.Messages {
		for _, blk := range m.Content {
			if blk.Type == model.BlockText {
				b.WriteString(blk.Text)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// TestInstructionsSurviveCompactions: a project's CLAUDE.md reaches the
// first request as Claude Code sends it, and every request after each
// of three /compacts still holds it, once.
func TestInstructionsSurviveCompactions(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: summarizer})
	os.WriteFile(filepath.Join(p.dir, "CLAUDE.md"), []byte("Always answer in haiku. MARKER-42\n"), 0o644)
	os.WriteFile(filepath.Join(p.dir, "style.md"), []byte("Tabs, never spaces. MARKER-INCLUDED\n"), 0o644)
	os.WriteFile(filepath.Join(p.dir, "AGENTS.md"), []byte("See @./style.md for style.\n"), 0o644)
	if code, _, e := p.cairn(t, "-p", "first question"); code != 0 {
		t.Fatal(e)
	}
	first := p.srv.Requests()[0]
	blocks := first.Params.Messages[0].Content
	if len(blocks) != 2 || !strings.HasPrefix(blocks[0].Text, "first question") {
		t.Fatalf("first message: %+v", blocks)
	}
	want := "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\n" +
		"Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written.\n\n" +
		"Contents of " + filepath.Join(p.dir, "CLAUDE.md") + " (project instructions, checked into the codebase):\n\nAlways answer in haiku. MARKER-42\n\n" +
		"Contents of " + filepath.Join(p.dir, "AGENTS.md") + " (project instructions, checked into the codebase):\n\nSee @./style.md for style.\n\n" +
		"Contents of " + filepath.Join(p.dir, "style.md") + " (project instructions, checked into the codebase):\n\nTabs, never spaces. MARKER-INCLUDED\n" +
		"# currentDate\nToday's date is "
	if !strings.HasPrefix(blocks[1].Text, want) {
		t.Errorf("the context reminder:\n%s\nwant it to start:\n%s", blocks[1].Text, want)
	}
	for i, q := range []string{"second question", "third question", "fourth question"} {
		if code, out, e := p.cairn(t, "-c", "-p", "/compact"); code != 0 {
			t.Fatalf("compaction %d: %s %s", i+1, out, e)
		}
		if code, _, e := p.cairn(t, "-c", "-p", q); code != 0 {
			t.Fatalf("%s: %s", q, e)
		}
		last := texts(t, p.srv.Last())
		if !strings.Contains(last, "THE-SUMMARY") {
			t.Fatalf("after compaction %d the request has no summary", i+1)
		}
		for _, marker := range []string{"MARKER-42", "MARKER-INCLUDED"} {
			n := strings.Count(last, marker)
			// Once after the first compaction. In a session this short the
			// next compaction keeps the whole tail — the previous
			// compaction's survivors included — and adds them again, as it
			// does for every survivor (the user's requests too).
			if n < 1 || (i == 0 && n != 1) {
				t.Errorf("after compaction %d the request holds %s %d times", i+1, marker, n)
			}
		}
	}
}

// TestInstructionChangeBetweenTurns: an edited CLAUDE.md goes to the next
// prompt as an update; the first prompt's bytes are not rewritten.
func TestInstructionChangeBetweenTurns(t *testing.T) {
	p := newProject(t)
	claude := filepath.Join(p.dir, "CLAUDE.md")
	os.WriteFile(claude, []byte("Version one."), 0o644)
	p.cairn(t, "-p", "q1")
	p.cairn(t, "-c", "-p", "q2")
	unchanged := texts(t, p.srv.Last())
	if strings.Count(unchanged, "Version one.") != 1 || strings.Contains(unchanged, "changed since") {
		t.Errorf("no change, yet:\n%s", unchanged)
	}
	os.WriteFile(claude, []byte("Version two, longer."), 0o644)
	p.cairn(t, "-c", "-p", "q3")
	r := p.srv.Last()
	msgs := r.Params.Messages
	if !strings.Contains(msgs[0].Content[1].Text, "Version one.") {
		t.Error("the first prompt was rewritten")
	}
	lastMsg := msgs[len(msgs)-1]
	var got string
	for _, b := range lastMsg.Content {
		got += b.Text
	}
	if !strings.Contains(got, "Instruction files changed since they were loaded") || !strings.Contains(got, "Version two, longer.") {
		t.Errorf("the update: %s", got)
	}
	if u := r.Usage; u.CacheReadInputTokens == 0 {
		t.Errorf("the request after the update read nothing from the cache: %+v", u)
	}
}

func TestMemoryExplain(t *testing.T) {
	p := newProject(t)
	os.WriteFile(filepath.Join(p.dir, "CLAUDE.md"), []byte("Use tabs.\n@missing.md and @./more.md\n"), 0o644)
	os.WriteFile(filepath.Join(p.dir, "more.md"), []byte("More."), 0o644)
	os.MkdirAll(filepath.Join(p.dir, ".claude", "rules"), 0o755)
	os.WriteFile(filepath.Join(p.dir, ".claude", "rules", "go.md"), []byte("---\npaths:\n  - \"**/*.go\"\n---\nGo rule"), 0o644)
	os.WriteFile(filepath.Join(p.dir, ".claude", "rules", "bad.md"), []byte("---\npaths: [oops\n---\nBad"), 0o644)
	dir := memory.Dir(session.Home{Dir: p.home}, p.dir)
	memory.Save(dir, "role.md", memory.Memory{Name: "role", Description: "the user is a data scientist", Type: memory.TypeUser, Body: "x"})
	memory.WriteIndex(dir, "- [role](role.md) — the user is a data scientist\n")
	code, out, errOut := p.cairn(t, "memory", "explain", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Instructions []struct {
			Order      int    `json:"order"`
			Path       string `json:"path"`
			Kind       string `json:"kind"`
			Why        string `json:"why"`
			IncludedBy string `json:"includedBy"`
			Tokens     int64  `json:"tokens"`
		} `json:"instructions"`
		Rules []struct {
			Path  string   `json:"path"`
			Globs []string `json:"globs"`
		} `json:"rules"`
		Memory struct {
			Enabled bool `json:"enabled"`
			Index   *struct {
				Lines int `json:"lines"`
			} `json:"index"`
			Files []struct {
				File string `json:"file"`
				Type string `json:"type"`
			} `json:"files"`
		} `json:"memory"`
		Warnings    []string `json:"warnings"`
		StartTokens int64    `json:"startTokens"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var order []string
	for _, f := range rep.Instructions {
		order = append(order, filepath.Base(f.Path))
	}
	if strings.Join(order, " ") != "CLAUDE.md more.md bad.md" {
		t.Errorf("order %v", order)
	}
	if rep.Instructions[1].IncludedBy != filepath.Join(p.dir, "CLAUDE.md") || rep.Instructions[0].Tokens == 0 || !strings.Contains(rep.Instructions[0].Why, "working directory") {
		t.Errorf("instructions %+v", rep.Instructions)
	}
	if len(rep.Rules) != 1 || rep.Rules[0].Globs[0] != "**/*.go" {
		t.Errorf("rules %+v", rep.Rules)
	}
	if !rep.Memory.Enabled || rep.Memory.Index == nil || rep.Memory.Index.Lines != 1 || len(rep.Memory.Files) != 1 || rep.Memory.Files[0].Type != "user" {
		t.Errorf("memory %+v", rep.Memory)
	}
	joined := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(joined, "@missing.md names no file") || !strings.Contains(joined, "bad.md: invalid front matter") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if !strings.Contains(errOut, "warning: ") {
		t.Error("warnings must also go to stderr")
	}
	code, text, _ := p.cairn(t, "memory", "explain")
	if code != 0 || !strings.Contains(text, "1. "+filepath.Join(p.dir, "CLAUDE.md")) || !strings.Contains(text, "paths: **/*.go") {
		t.Errorf("text output:\n%s", text)
	}
}

// TestHeadlessMemoryWrite: in default mode a headless run may still write
// its memory folder (and nothing else outside the rules).
func TestHeadlessMemoryWrite(t *testing.T) {
	p := newProject(t)
	dir := memory.Dir(session.Home{Dir: p.home}, p.dir)
	mem := memory.Memory{Name: "tabs", Description: "the user wants tabs", Type: memory.TypeFeedback, Body: "Tabs.\n**Why:** said so.\n**How to apply:** indent with tabs."}
	in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(dir, "tabs.md"), "content": string(mem.Encode())})
	other, _ := json.Marshal(map[string]string{"file_path": filepath.Join(p.dir, "x.txt"), "content": "x"})
	big, _ := json.Marshal(map[string]string{"file_path": filepath.Join(dir, "MEMORY.md"), "content": strings.Repeat("- line\n", 250)})
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("t1", "Write", string(in)), modeltest.ToolUse("t2", "Write", string(other)), modeltest.ToolUse("t3", "Write", string(big))}},
		modeltest.Text("Remembered."),
	)
	if code, _, e := p.cairn(t, "-p", "remember that I want tabs"); code != 0 {
		t.Fatal(e)
	}
	if _, err := os.Stat(filepath.Join(dir, "tabs.md")); err != nil {
		t.Errorf("the memory was not written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "x.txt")); err == nil {
		t.Error("a project file was written in default mode")
	}
	if _, err := os.Stat(filepath.Join(dir, "MEMORY.md")); err == nil {
		t.Error("an index over the limits was written")
	}
	if body := string(p.srv.Last().Body); !strings.Contains(body, "MEMORY.md would have 250 lines") {
		t.Error("the model was not told why the index was refused")
	}
}
