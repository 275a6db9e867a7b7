package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

func registry(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tools.Core()...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func writeCall(id, path, content string) model.Block {
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return modeltest.ToolUse(id, "Write", string(in))
}

// mainTurn runs one turn of a "main conversation" against srv, so the
// server's cache holds its prefix, and returns its system prompt and
// history.
func mainTurn(t *testing.T, srv *modeltest.Server, reg *tool.Registry, prompt string) ([]model.SystemBlock, []model.Message) {
	t.Helper()
	system := []model.SystemBlock{{Text: "You are a coding agent." + strings.Repeat(" Be careful.", 200), Cache: true}}
	sess := engine.New(engine.Config{Model: client(t, srv), ModelName: "claude-x", MaxTokens: 1000, Tools: reg, Env: tool.NewEnv(t.TempDir()), Recorder: discard{},
		System: func(context.Context) ([]model.SystemBlock, error) { return system, nil }}, nil)
	for _, err := range sess.Run(context.Background(), engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(prompt)}}}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	return system, sess.History()
}

func TestExtractWritesOnlyInTheFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	outside := filepath.Join(t.TempDir(), "escape.md")
	srv := modeltest.Start(t, modeltest.Config{})
	reg := registry(t)
	srv.Enqueue(modeltest.Text("Noted."))
	system, history := mainTurn(t, srv, reg, "I am a data scientist and I prefer polars to pandas. "+strings.Repeat("Some context. ", 2000))
	mem := Memory{Name: "prefers_polars", Description: "the user prefers polars to pandas", Type: TypeUser, Body: "Prefers polars.\n\n**Why:** said so.\n**How to apply:** use polars in examples."}
	srv.Enqueue(
		modeltest.Reply{Content: []model.Block{writeCall("t1", filepath.Join(dir, "prefers_polars.md"), string(mem.Encode()))}},
		modeltest.Reply{Content: []model.Block{writeCall("t2", outside, "escaped"), modeltest.ToolUse("t3", "Bash", `{"command":"echo hi > /tmp/x"}`)}},
		modeltest.Reply{Content: []model.Block{writeCall("t4", filepath.Join(dir, IndexName), strings.Repeat("too long\n", 300))}},
		modeltest.Reply{Content: []model.Block{writeCall("t5", filepath.Join(dir, IndexName), "- [prefers_polars](prefers_polars.md) — the user prefers polars\n")}},
		modeltest.Text("Saved."),
		modeltest.Text("a sixth request must not happen"),
	)
	done := make(chan Extraction, 1)
	x := NewExtractor(ExtractConfig{Dir: dir, Model: client(t, srv), ModelName: "claude-x", MaxTokens: 1000, Tools: reg, Done: func(e Extraction) { done <- e }})
	if !x.AfterTurn(system, history, 0) {
		t.Fatal("extraction did not start")
	}
	if err := x.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if rep.Err != nil || rep.Requests != 5 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the fork wrote outside the memory folder")
	}
	got, err := os.ReadFile(filepath.Join(dir, "prefers_polars.md"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := Parse(got); err != nil || m.Name != "prefers_polars" {
		t.Errorf("memory %+v, %v", m, err)
	}
	index, _ := ReadIndex(dir)
	if index != "- [prefers_polars](prefers_polars.md) — the user prefers polars" {
		t.Errorf("index %q", index)
	}
	reqs := srv.Requests()
	fork := reqs[1:]
	if len(fork) != 5 {
		t.Fatalf("%d fork requests", len(fork))
	}
	// The refusals reached the model as errors it can read.
	third := string(fork[2].Body)
	if !strings.Contains(third, "Permission to edit "+outside+" was not granted") || !strings.Contains(third, "Bash is not available while keeping memory") {
		t.Errorf("refusals: %s", third)
	}
	if !strings.Contains(string(fork[3].Body), "MEMORY.md would have 300 lines") {
		t.Error("the long index was not refused")
	}
	// The fork's first request starts with the main conversation's bytes.
	u := fork[0].Usage
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	if frac := float64(u.CacheReadInputTokens) / float64(total); frac < 0.9 {
		t.Errorf("the fork read %.0f%% of its input from the cache (%+v), want ≥ 90%%", 100*frac, u)
	} else {
		t.Logf("the fork's first request read %.1f%% of its input from the cache", 100*frac)
	}
}

func TestExtractSkippedWhenMainWroteMemory(t *testing.T) {
	dir := "/h/memory"
	x := NewExtractor(ExtractConfig{Dir: dir})
	history := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("remember X")}},
		{Role: model.RoleAssistant, Content: []model.Block{writeCall("t1", dir+"/x.md", "...")}},
	}
	if x.AfterTurn(nil, history, 0) {
		t.Error("extraction ran after a turn that wrote memory")
	}
	// Throttled: with Every 2, the first eligible turn is skipped.
	y := NewExtractor(ExtractConfig{Dir: dir, Every: 2, Model: nil})
	plain := history[:1]
	y.mu.Lock()
	y.running = true // stand in for a run, so nothing is started
	y.mu.Unlock()
	if y.AfterTurn(nil, plain, 0) || y.trailing != nil {
		t.Error("the first of every two turns must be skipped")
	}
	if y.AfterTurn(nil, plain, 0) || y.trailing == nil {
		t.Error("the second turn must queue behind the running extraction")
	}
}

func TestExtractOneAtATime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight, most := 0, 0
	srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		return modeltest.Text("Nothing to save.")
	}})
	var runs sync.WaitGroup
	runs.Add(2)
	x := NewExtractor(ExtractConfig{Dir: dir, Model: client(t, srv), ModelName: "claude-x", Tools: registry(t), Done: func(Extraction) { runs.Done() }})
	h := []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hello")}}, {Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("hi")}}}
	if !x.AfterTurn(nil, h, 0) {
		t.Fatal("first did not start")
	}
	for range 3 { // turns ending while it runs: the newest waits
		if x.AfterTurn(nil, h, 0) {
			t.Fatal("a second extraction started while one runs")
		}
	}
	close(release)
	runs.Wait()
	x.Wait(context.Background())
	if most != 1 || len(srv.Requests()) != 2 {
		t.Errorf("%d at once, %d requests; want 1 and 2", most, len(srv.Requests()))
	}
}

// TestTwoSessionsExtractAtOnce: two sessions' forks write the same memory
// and the index at the same moment; every file ends whole, one writer's
// version or the other's.
func TestTwoSessionsExtractAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	const size = 1 << 20
	contents := map[string]string{}
	var xs []*Extractor
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, fill := range []string{"a", "b"} {
		m := Memory{Name: "shared", Description: "written by session " + fill, Type: TypeProject, Body: strings.Repeat(fill, size)}
		contents[fill] = string(m.Encode())
		index := fmt.Sprintf("- [shared](shared.md) — from session %s\n", fill)
		write := modeltest.Reply{Content: []model.Block{writeCall(fmt.Sprint("w", i), filepath.Join(dir, "shared.md"), contents[fill]), writeCall(fmt.Sprint("i", i), filepath.Join(dir, IndexName), index)}}
		var n atomic.Int32
		srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
			if n.Add(1) == 1 {
				<-start // both forks answer at the same moment
				return write
			}
			return modeltest.Text("Done.")
		}})
		wg.Add(1)
		x := NewExtractor(ExtractConfig{Dir: dir, Model: client(t, srv), ModelName: "claude-x", Tools: registry(t), Done: func(e Extraction) {
			if e.Err != nil {
				t.Error(e.Err)
			}
			wg.Done()
		}})
		xs = append(xs, x)
	}
	os.MkdirAll(dir, 0o755)
	h := []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hello")}}, {Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("hi")}}}
	for _, x := range xs {
		x.AfterTurn(nil, h, 0)
	}
	close(start)
	wg.Wait()
	got, err := os.ReadFile(filepath.Join(dir, "shared.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != contents["a"] && string(got) != contents["b"] {
		t.Errorf("shared.md is torn: %d bytes, starts %q", len(got), got[:80])
	}
	index, _ := os.ReadFile(filepath.Join(dir, IndexName))
	if !bytes.HasPrefix(index, []byte("- [shared](shared.md) — from session ")) || bytes.Count(index, []byte("\n")) != 1 {
		t.Errorf("index %q", index)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestConfine(t *testing.T) {
	dir := t.TempDir()
	gate, err := Confine(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	call := func(name string, in map[string]any) engine.Verdict {
		tl, _ := reg.Lookup(name)
		b, _ := json.Marshal(in)
		return gate(context.Background(), tl, model.Block{Type: model.BlockToolUse, Name: name, Input: b})
	}
	tests := []struct {
		name  string
		tool  string
		input map[string]any
		allow bool
	}{
		{"write inside", "Write", map[string]any{"file_path": filepath.Join(dir, "a.md"), "content": "x"}, true},
		{"edit inside", "Edit", map[string]any{"file_path": filepath.Join(dir, "a.md"), "old_string": "x", "new_string": "y"}, true},
		{"read inside", "Read", map[string]any{"file_path": filepath.Join(dir, "a.md")}, true},
		{"glob inside", "Glob", map[string]any{"pattern": "*.md"}, true},
		{"write outside", "Write", map[string]any{"file_path": "/etc/passwd", "content": "x"}, false},
		{"write via ..", "Write", map[string]any{"file_path": filepath.Join(dir, "..", "x.md"), "content": "x"}, false},
		{"read outside", "Read", map[string]any{"file_path": "/etc/hostname"}, false},
		{"grep outside", "Grep", map[string]any{"pattern": "x", "path": "/etc"}, false},
		{"bash", "Bash", map[string]any{"command": "ls"}, false},
		{"fetch", "WebFetch", map[string]any{"url": "https://example.com", "prompt": "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if v := call(tc.tool, tc.input); v.Allow != tc.allow {
				t.Errorf("allow %v (%s)", v.Allow, v.Reason)
			}
		})
	}
	// A symbolic link out of the folder does not let a write escape.
	os.Symlink("/etc", filepath.Join(dir, "link"))
	if v := call("Write", map[string]any{"file_path": filepath.Join(dir, "link", "x.md"), "content": "x"}); v.Allow {
		t.Error("a write through a link out of the folder was allowed")
	}
}
