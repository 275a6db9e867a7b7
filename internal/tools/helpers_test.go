package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// newEnv returns an environment whose project is a fresh temporary folder.
func newEnv(t *testing.T) *tool.Env {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := tool.NewEnv(dir)
	env.SessionDir = t.TempDir()
	return env
}

// call runs tl with input (marshalled to JSON unless it already is).
func call(t *testing.T, tl tool.Tool, env *tool.Env, input any) tool.Result {
	t.Helper()
	return callCtx(t, context.Background(), tl, env, input)
}

func callCtx(t *testing.T, ctx context.Context, tl tool.Tool, env *tool.Env, input any) tool.Result {
	t.Helper()
	r, err := tl.Run(ctx, env, rawInput(t, input))
	if err != nil {
		t.Fatalf("%s: Run returned error %v", tl.Spec().Name, err)
	}
	return r
}

func rawInput(t *testing.T, input any) json.RawMessage {
	t.Helper()
	if raw, ok := input.(json.RawMessage); ok {
		return raw
	}
	if s, ok := input.(string); ok {
		return json.RawMessage(s)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// text returns the text of a result's single text block.
func text(t *testing.T, r tool.Result) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != model.BlockText {
		t.Fatalf("result content = %+v, want one text block", r.Content)
	}
	return r.Content[0].Text
}

// detail returns a result's Detail as generic JSON, as the transcript
// stores it.
func detail(t *testing.T, r tool.Result) any {
	t.Helper()
	raw, err := jsonw.Marshal(r.Detail)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
