package tools

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

// TestClaudeCodeCalls replays the tool calls of a real Claude Code 2.1.197
// session (testdata/cc-2.1.197-calls.jsonl, taken from
// /work/shared/compat) and checks that cairn's tools answer them with the
// same text and the same toolUseResult.
func TestClaudeCodeCalls(t *testing.T) {
	const recorded = "/home/user/proj197"
	env := newEnv(t)
	project := env.ProjectDir
	writeTestFile(t, filepath.Join(project, "notes.txt"), "line one\nline two\nTODO: fix greeting\n")
	writeTestFile(t, filepath.Join(project, "hello.py"), "def greet(name):\n    return \"Hello, \" + name\n\nif __name__ == \"__main__\":\n    print(greet(\"world\"))\n")

	f, err := os.Open("testdata/cc-2.1.197-calls.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byName := map[string]tool.Tool{}
	for _, tl := range Core() {
		byName[tl.Spec().Name] = tl
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.ReplaceAll(sc.Text(), recorded, project)
		var c struct {
			Name          string          `json:"name"`
			Input         json.RawMessage `json:"input"`
			Content       string          `json:"content"`
			IsError       bool            `json:"is_error"`
			ToolUseResult any             `json:"toolUseResult"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		var in struct{ Command string }
		_ = json.Unmarshal(c.Input, &in)
		switch {
		case strings.HasPrefix(in.Command, "ls -la"):
			continue // lists dates and sizes of that machine
		case strings.HasPrefix(in.Command, "python3"):
			if _, err := exec.LookPath("python3"); err != nil {
				continue
			}
		}
		r := call(t, byName[c.Name], env, c.Input)
		if got := text(t, r); got != c.Content || r.IsError != c.IsError {
			t.Errorf("call %d (%s): content = %q (error %v), want %q (error %v)", n, c.Name, got, r.IsError, c.Content, c.IsError)
		}
		if diff := cmp.Diff(c.ToolUseResult, detail(t, r)); diff != "" {
			t.Errorf("call %d (%s): toolUseResult (-claude code +cairn):\n%s", n, c.Name, diff)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
