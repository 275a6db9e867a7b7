package sessionctx_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/sessionctx"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// memoryDir is a memory folder holding one memory, so a recall asks the
// model.
func memoryDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := memory.Save(dir, "db.md", memory.Memory{Name: "db", Description: "tests use the real database", Type: memory.TypeFeedback, Body: "No mocks."}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// slowToStop is a model whose stream waits until it is cancelled, then
// takes a second (of the bubble's clock) to wind down, as a real client
// closing its connection does. returned is set when the stream ends.
type slowToStop struct{ returned atomic.Bool }

func (m *slowToStop) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		defer m.returned.Store(true)
		<-ctx.Done()
		time.Sleep(time.Second)
		yield(model.Chunk{}, ctx.Err())
	}
}

// TestCloseStopsRecall: Close cancels a recall in flight and returns only
// once its goroutine has ended — the model's stream has returned and the
// recall is done — so nothing of the session runs after Close.
func TestCloseStopsRecall(t *testing.T) {
	dir := memoryDir(t)
	synctest.Test(t, func(t *testing.T) {
		m := &slowToStop{}
		var done atomic.Bool
		c := sessionctx.New(sessionctx.Options{
			Recall:     &memory.Recaller{Dir: dir, Model: m, ModelName: "small"},
			RecallDone: func(int) { done.Store(true) },
		}, nil)
		if got := c.Prompt(t.Context(), "why do the tests fail?"); len(got) != 0 {
			t.Errorf("the first prompt carries %d attachments, want none", len(got))
		}
		synctest.Wait() // the recall waits on the model
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if !m.returned.Load() || !done.Load() {
			t.Errorf("Close returned with the recall still running (stream returned %v, recall done %v)", m.returned.Load(), done.Load())
		}
		// Closed, it starts no recall.
		c.Prompt(t.Context(), "again")
		synctest.Wait()
	})
}

// TestRecallGoesWithTheNextResults: memories recalled for a prompt go
// with the last result of the next response's calls, once; the next
// prompt does not repeat them.
func TestRecallGoesWithTheNextResults(t *testing.T) {
	dir := memoryDir(t)
	m := modeltest.NewScripted(modeltest.Say(`{"selected": ["db.md"]}`))
	recalled := make(chan int, 1)
	c := sessionctx.New(sessionctx.Options{
		Recall:     &memory.Recaller{Dir: dir, Model: m, ModelName: "small"},
		RecallDone: func(n int) { recalled <- n },
	}, nil)
	defer c.Close()
	c.Prompt(t.Context(), "why do the tests fail?")
	if n := <-recalled; n != 1 {
		t.Fatalf("recalled %d memories, want 1", n)
	}
	out := c.Results(t.Context(), []engine.Outcome{{Result: tool.Text("a")}, {Result: tool.Text("b")}})
	if len(out[0].Result.Content) != 1 {
		t.Errorf("the first result got %d blocks, want its own only", len(out[0].Result.Content))
	}
	if last := out[1].Result.Content; len(last) != 2 || !strings.Contains(last[1].Text, "No mocks.") {
		t.Errorf("the last result is %+v, want it with the memory", last)
	}
	if got := c.Prompt(t.Context(), ""); len(got) != 0 {
		t.Errorf("the next prompt carries %+v: the memory was shown already", got)
	}
}

// TestNestedInstructions: a call that read a file in a folder with its
// own CLAUDE.md brings that file in with its result, once; a failed call
// or one that names no file brings nothing.
func TestNestedInstructions(t *testing.T) {
	cwd := t.TempDir()
	sub := filepath.Join(cwd, "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "CLAUDE.md"), []byte("PKG-RULES"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := coretools.Read{}
	c := sessionctx.New(sessionctx.Options{
		Instructions: instructions.NewTracker(instructions.Options{Cwd: cwd, Home: t.TempDir(), Managed: []string{}, ManagedRules: []string{}}),
		Tool: func(name string) (tool.Tool, bool) {
			return read, name == read.Spec().Name
		},
	}, nil)
	defer c.Close()
	call := func(path string) model.Block {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		return model.Block{Type: model.BlockToolUse, ID: "t", Name: "Read", Input: in}
	}
	file := filepath.Join(sub, "a.go")
	failed := tool.Errorf("no such file")
	out := c.Results(t.Context(), []engine.Outcome{
		{Call: call(file), Result: failed},
		{Call: model.Block{Type: model.BlockToolUse, Name: "Other", Input: json.RawMessage(`{}`)}, Result: tool.Text("x")},
		{Call: call(file), Result: tool.Text("package a")},
	})
	var got []int
	for _, o := range out {
		got = append(got, len(o.Result.Content))
	}
	if diff := cmp.Diff([]int{1, 1, 2}, got); diff != "" {
		t.Errorf("blocks per result (-want +got):\n%s", diff)
	}
	if !strings.Contains(out[2].Result.Content[1].Text, "PKG-RULES") {
		t.Errorf("the read's result carries %q", out[2].Result.Content[1].Text)
	}
	again := c.Results(t.Context(), []engine.Outcome{{Call: call(file), Result: tool.Text("package a")}})
	if n := len(again[0].Result.Content); n != 1 {
		t.Errorf("a second read brought the instructions again (%d blocks)", n)
	}
}
