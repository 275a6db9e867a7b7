package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Note writes a line to a file. Besides the three safety answers every
// Tool gives, it says which file a call writes (tool.PathToucher), so
// permission rules, file history and instruction files treat it as they
// treat Write, and how a call reads in a line (tool.Summarizer).
type Note struct{}

func (Note) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Note", Description: "Writes a line to a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"},"line":{"type":"string"}},"required":["file","line"]}`)}
}
func (Note) ReadOnly(json.RawMessage) bool        { return false }
func (Note) Destructive(json.RawMessage) bool     { return false }
func (Note) ConcurrencySafe(json.RawMessage) bool { return false }

func (Note) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	var in struct{ File, Line string }
	if err := json.Unmarshal(input, &in); err != nil || in.File == "" {
		return tool.Errorf("Note needs a file and a line"), nil
	}
	path := filepath.Join(env.Cwd(), in.File)
	if env.BeforeChange != nil { // file history backs the old content up
		if err := env.BeforeChange(path); err != nil {
			return tool.Result{}, err
		}
	}
	if err := os.WriteFile(path, []byte(in.Line+"\n"), 0o644); err != nil {
		return tool.Errorf("Cannot write %s: %v", in.File, err), nil
	}
	return tool.Text("Noted in " + in.File), nil
}

func (Note) TouchedPaths(input json.RawMessage) []tool.PathUse {
	var in struct{ File string }
	if json.Unmarshal(input, &in) != nil || in.File == "" {
		return nil
	}
	return []tool.PathUse{{Path: in.File, Write: true}}
}

func (Note) Summary(input json.RawMessage, rel func(string) string) string {
	var in struct{ File string }
	_ = json.Unmarshal(input, &in)
	return rel(in.File)
}

// A tool is registered by value; the rest of cairn asks it what it needs
// to know.
func Example() {
	dir, _ := os.MkdirTemp("", "note")
	defer os.RemoveAll(dir)
	reg, err := tool.NewRegistry(Note{})
	if err != nil {
		fmt.Println(err)
		return
	}
	t, _ := reg.Lookup("Note")
	input := json.RawMessage(`{"file":"todo.txt","line":"buy milk"}`)
	fmt.Println("writes a file:", tool.Writes(t, input), tool.TouchedPaths(t, input))
	fmt.Println("shown as:", tool.Summary(t, input, nil))
	fmt.Println("result can be cleared:", tool.IsReobtainable(t))

	env := tool.NewEnv(dir)
	env.BeforeChange = func(path string) error { fmt.Println("backing up", filepath.Base(path)); return nil }
	res, err := t.Run(context.Background(), env, input)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// writes a file: true [{todo.txt true false}]
	// shown as: todo.txt
	// result can be cleared: false
	// backing up todo.txt
	// Noted in todo.txt
}
