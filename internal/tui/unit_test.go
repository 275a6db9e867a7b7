package tui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

func TestSplitBlocks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		text     string
		complete []string
		tail     string
	}{
		{"one growing paragraph", "Hello wor", nil, "Hello wor"},
		{"a finished paragraph", "One.\n\nTwo", []string{"One.\n"}, "Two"},
		{"blank line ends nothing yet", "One.\n\n", nil, "One.\n\n"},
		{"fence keeps its blank lines", "```go\na\n\nb\n```\n\nafter", []string{"```go\na\n\nb\n```\n"}, "after"},
		{"open fence", "x\n\n```\na\n\nb", []string{"x\n"}, "```\na\n\nb"},
		{"indented continuation", "- a\n\n  more\n\nnext", []string{"- a\n\n  more\n"}, "next"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			complete, tail := splitBlocks(tc.text)
			if diff := cmp.Diff(tc.complete, complete); diff != "" {
				t.Errorf("complete (-want +got):\n%s", diff)
			}
			if tail != tc.tail {
				t.Errorf("tail = %q, want %q", tail, tc.tail)
			}
		})
	}
}

func TestSuggestRule(t *testing.T) {
	project := "/work/p"
	for _, tc := range []struct {
		tool, input, want string
	}{
		{"Bash", `{"command":"npm test"}`, "Bash(npm test)"},
		{"Bash", `{"command":"npm run test -- --watch"}`, "Bash(npm run:*)"},
		{"Bash", `{"command":"go vet ./... && go test ./..."}`, "Bash(go vet:*), Bash(go test:*)"},
		{"Bash", `{"command":"cd sub && make"}`, "Bash(make)"},
		{"Bash", `{"command":"rm -rf build; rm -rf dist"}`, "Bash(rm -rf build), Bash(rm -rf dist)"},
		{"Bash", `{"command":"FOO=1 make test"}`, "Bash(make test)"},
		{"Bash", `{"command":"echo $(date)"}`, ""},
		{"Edit", `{"file_path":"/work/p/src/a.go"}`, "Edit(/src/a.go)"},
		{"Write", `{"file_path":"/etc/hosts"}`, "Edit(//etc/hosts)"},
		{"Read", `{"file_path":"/home/u/notes.md"}`, "Read(//home/u/notes.md)"},
		{"Grep", `{"pattern":"x","path":"/work/p/src"}`, "Read(/src)"},
		{"Glob", `{"pattern":"*.go"}`, "Read"},
		{"WebFetch", `{"url":"https://Go.dev/doc"}`, "WebFetch(domain:go.dev)"},
		{"mcp__gh__issue", `{}`, "mcp__gh__issue"},
	} {
		if got := SuggestRule(coreTool(tc.tool), json.RawMessage(tc.input), project); got != tc.want {
			t.Errorf("SuggestRule(%s, %s) = %q, want %q", tc.tool, tc.input, got, tc.want)
		}
	}
}

func TestAddAllowRuleKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := LocalSettings(dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"model":"x","permissions":{"deny":["Bash(rm:*)"],"allow":["Read"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time changes nothing
		if err := AddAllowRule(dir, "Bash(npm test)"); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Model       string
		Permissions struct{ Allow, Deny []string }
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "x" || !cmp.Equal(got.Permissions.Deny, []string{"Bash(rm:*)"}) || !cmp.Equal(got.Permissions.Allow, []string{"Read", "Bash(npm test)"}) {
		t.Errorf("settings = %s", b)
	}
	if err := os.WriteFile(path, []byte(`{broken`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AddAllowRule(dir, "Read"); err == nil {
		t.Error("a broken settings file was overwritten")
	}
}

func TestSlashCommand(t *testing.T) {
	for _, tc := range []struct {
		in, name, args string
		ok             bool
	}{
		{"/compact keep the API", "compact", "keep the API", true},
		{"/help", "help", "", true},
		{"/usr/bin/env is odd", "", "", false},
		{"//not a command", "", "", false},
		{"hello", "", "", false},
	} {
		name, args, ok := slashCommand(tc.in)
		if name != tc.name || args != tc.args || ok != tc.ok {
			t.Errorf("slashCommand(%q) = %q, %q, %v", tc.in, name, args, ok)
		}
	}
}

func TestTranscriptScroll(t *testing.T) {
	r := &renderer{st: newStyles(ThemeDark), md: newMarkdown(ThemeDark)}
	tr := newTranscript()
	for i := range 50 {
		tr.add(&item{kind: kindInfo, text: string(rune('a' + i%26))}) // two lines each
	}
	if got := tr.view(r, 20, 4); !cmp.Equal(got, []string{"w", "", "x", ""}) {
		t.Fatalf("bottom = %q", got)
	}
	tr.scroll(r, 20, 4, -4)
	if tr.follow {
		t.Fatal("still following after scrolling up")
	}
	if got := tr.view(r, 20, 4); !cmp.Equal(got, []string{"u", "", "v", ""}) {
		t.Errorf("after one page up = %q", got)
	}
	tr.home()
	if got := tr.view(r, 20, 2); !cmp.Equal(got, []string{"a", ""}) {
		t.Errorf("home = %q", got)
	}
	tr.scroll(r, 20, 4, 1000)
	if !tr.follow {
		t.Error("scrolling past the end does not follow again")
	}
}

// coreTool is the core tool named name, or one that says nothing of
// itself (an MCP tool).
func coreTool(name string) tool.Tool {
	for _, t := range tools.Core() {
		if t.Spec().Name == name {
			return t
		}
	}
	return bareTool{name}
}

type bareTool struct{ name string }

func (b bareTool) Spec() model.ToolSpec               { return model.ToolSpec{Name: b.name} }
func (bareTool) ReadOnly(json.RawMessage) bool        { return false }
func (bareTool) Destructive(json.RawMessage) bool     { return false }
func (bareTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (bareTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text(""), nil
}
