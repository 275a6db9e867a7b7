package subagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Definition
		err  string
	}{
		{
			name: "comma list",
			in:   "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob\nmodel: haiku\n---\nYou review code.\n",
			want: Definition{Name: "reviewer", Description: "Reviews code", Tools: []string{"Read", "Grep", "Glob"}, Model: "haiku", Prompt: "You review code."},
		},
		{
			name: "yaml list and disallowed",
			in:   "---\nname: runner\ndescription: Runs tests\ntools:\n  - Bash(go test:*)\n  - Read\ndisallowedTools: Write\n---\nRun them.",
			want: Definition{Name: "runner", Description: "Runs tests", Tools: []string{"Bash", "Read"}, DisallowedTools: []string{"Write"}, Prompt: "Run them."},
		},
		{
			name: "no tools is every tool",
			in:   "---\nname: any\ndescription: Anything\n---\n",
			want: Definition{Name: "any", Description: "Anything"},
		},
		{
			name: "empty tools is none",
			in:   "---\nname: none\ndescription: Nothing\ntools: \"\"\n---\n",
			want: Definition{Name: "none", Description: "Nothing", Tools: []string{}},
		},
		{
			name: "unquoted colons, as Claude Code writes them",
			in:   "---\nname: helper\ndescription: Use this agent when: the user asks. Examples: <example>a</example>\ntools: Read\n---\nHelp.\n",
			want: Definition{Name: "helper", Description: "Use this agent when: the user asks. Examples: <example>a</example>", Tools: []string{"Read"}, Prompt: "Help."},
		},
		{
			// Not YAML (the colon), so read line by line: a tools list
			// written as YAML items is still the list.
			name: "unquoted colons with a tools list",
			in:   "---\nname: helper\ndescription: Use it when: asked\ntools:\n  - Read\n  - Bash(go test:*)\ndisallowedTools: [Write, \"Edit\"]\n---\nHelp.\n",
			want: Definition{Name: "helper", Description: "Use it when: asked", Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Write", "Edit"}, Prompt: "Help."},
		},
		{
			name: "unquoted colons with an empty tools key is every tool",
			in:   "---\nname: helper\ndescription: Use it when: asked\ntools:\nmodel: haiku\n---\n",
			want: Definition{Name: "helper", Description: "Use it when: asked", Model: "haiku"},
		},
		{
			name: "unquoted colons with quoted empty tools is none",
			in:   "---\nname: helper\ndescription: Use it when: asked\ntools: \"\"\n---\n",
			want: Definition{Name: "helper", Description: "Use it when: asked", Tools: []string{}},
		},
		{name: "no front matter", in: "# Just text\n", err: "no front matter"},
		{name: "unclosed", in: "---\nname: x\n", err: "never closed"},
		{name: "no name", in: "---\ndescription: x\n---\n", err: `no "name"`},
		{name: "no description", in: "---\nname: x\n---\n", err: `no "description"`},
		{name: "bad name", in: "---\nname: two words\ndescription: x\n---\n", err: "not usable"},
		{name: "bad tools", in: "---\nname: x\ndescription: x\ntools: {a: b}\n---\n", err: "list of tool names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %+v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user := filepath.Join(home, "agents", "reviewer.md")
	claude := filepath.Join(project, ".claude", "agents", "reviewer.md")
	cairn := filepath.Join(project, ".cairn", "agents", "general.md")
	write(user, "---\nname: reviewer\ndescription: the user's\n---\n")
	write(claude, "---\nname: reviewer\ndescription: the project's\n---\n")
	write(cairn, "---\nname: general-purpose\ndescription: replaced\n---\n")
	write(filepath.Join(project, ".claude", "agents", "notes.txt"), "not an agent")
	write(filepath.Join(project, ".claude", "agents", "broken.md"), "no front matter")

	defs, warnings := Load(Dirs(home, project)...)
	var got []string
	for _, d := range defs {
		got = append(got, d.Name+": "+d.Description+" @ "+d.Path)
	}
	want := []string{"general-purpose: replaced @ " + cairn, "reviewer: the project's @ " + claude}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "broken.md") || !strings.Contains(warnings[0], "skipped") {
		t.Errorf("warnings %q", warnings)
	}

	defs, warnings = Load(filepath.Join(t.TempDir(), "missing"))
	if len(defs) != 1 || defs[0].Name != GeneralPurpose || len(warnings) != 0 {
		t.Errorf("a missing folder: %+v %q", defs, warnings)
	}
}

func TestAllowsAndModel(t *testing.T) {
	d := Definition{Tools: []string{"Read", "Bash"}, DisallowedTools: []string{"Bash"}}
	if !d.Allows("Read") || d.Allows("Bash") || d.Allows("Write") {
		t.Error("Allows does not follow tools and disallowedTools")
	}
	if all := (Definition{}); !all.Allows("Write") {
		t.Error("no tools list should allow every tool")
	}
	for _, tc := range []struct{ model, parent, want string }{
		{"", "claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"inherit", "qwen2.5-coder", "qwen2.5-coder"},
		{"haiku", "claude-sonnet-4-5", "claude-haiku-4-5"},
		{"sonnet", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"},
		{"opus", "qwen2.5-coder", "qwen2.5-coder"},
		{"claude-opus-4-1", "claude-sonnet-4-5", "claude-opus-4-1"},
	} {
		if got := (Definition{Model: tc.model}).ModelName(tc.parent); got != tc.want {
			t.Errorf("model %q under %q = %q, want %q", tc.model, tc.parent, got, tc.want)
		}
	}
}

// FuzzParse: any file is an agent or an error, never a panic, and an
// agent always has a usable name and a description.
func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: b\ntools: Read, Bash(x:*)\n---\nbody"))
	f.Add([]byte("---\nname: a\ndescription: x: y: z\ntools:\n  - 1\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err == nil && (d.Name == "" || !validName(d.Name) || d.Description == "") {
			t.Errorf("Parse accepted %+v", d)
		}
	})
}
