package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

// searchTree makes a small git work tree to search: files with set
// modification times (a.go newest), ignored, hidden, binary and .git files.
func searchTree(t *testing.T) *tool.Env {
	t.Helper()
	env := newEnv(t)
	files := []struct {
		path, content string
	}{
		{"a.go", "package a\n\nfunc Foo() {}\n\n// foo again\nvar x = Foo\n"},
		{"b/b.go", "package b\n// TODO: call Foo\nfunc Bar() {}\n"},
		{"b/c/notes.md", "nothing here\n"},
		{".hidden/h.txt", "Foo hidden\n"},
		{"ignored/x.go", "Foo ignored\n"},
		{"debug.log", "Foo in a log\n"},
		{"bin.dat", "Foo\x00binary\n"},
		{".git/config", "Foo in git\n"},
		{".gitignore", "ignored/\n*.log\n"},
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, f := range files {
		p := filepath.Join(env.ProjectDir, filepath.FromSlash(f.path))
		writeTestFile(t, p, f.content)
		mt := base.Add(-time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func TestGrep(t *testing.T) {
	tests := []struct {
		name  string
		input map[string]any
		want  string // with $P for the project folder
	}{
		{
			name:  "files, newest first, ignoring what should be",
			input: map[string]any{"pattern": "Foo"},
			want:  "Found 3 files\n$P/a.go\n$P/b/b.go\n$P/.hidden/h.txt",
		},
		{
			name:  "content with line numbers",
			input: map[string]any{"pattern": "Foo", "output_mode": "content", "path": "a.go"},
			want:  "3:func Foo() {}\n6:var x = Foo",
		},
		{
			name:  "content without line numbers, ignoring case",
			input: map[string]any{"pattern": "foo", "output_mode": "content", "path": "a.go", "-n": false, "-i": true},
			want:  "func Foo() {}\n// foo again\nvar x = Foo",
		},
		{
			name:  "content with context over several files",
			input: map[string]any{"pattern": "Foo", "output_mode": "content", "glob": "*.go", "-C": 1},
			want:  "$P/a.go-2-\n$P/a.go:3:func Foo() {}\n$P/a.go-4-\n$P/a.go-5-// foo again\n$P/a.go:6:var x = Foo\n--\n$P/b/b.go-1-package b\n$P/b/b.go:2:// TODO: call Foo\n$P/b/b.go-3-func Bar() {}",
		},
		{
			name:  "after context merges groups",
			input: map[string]any{"pattern": "Foo", "output_mode": "content", "path": "a.go", "-A": 3},
			want:  "3:func Foo() {}\n4-\n5-// foo again\n6:var x = Foo",
		},
		{
			name:  "count",
			input: map[string]any{"pattern": "Foo", "output_mode": "count", "type": "go"},
			want:  "$P/a.go:2\n$P/b/b.go:1\n\nFound 3 total occurrences across 2 files.",
		},
		{
			name:  "count in one file",
			input: map[string]any{"pattern": "Foo", "output_mode": "count", "path": "$P/a.go"},
			want:  "2\n\nFound 2 total occurrences across 1 file.",
		},
		{
			name:  "glob list and exclusion",
			input: map[string]any{"pattern": "Foo|nothing", "glob": "*.md, *.txt"},
			want:  "Found 2 files\n$P/b/c/notes.md\n$P/.hidden/h.txt",
		},
		{
			name:  "excluding a folder",
			input: map[string]any{"pattern": "Foo", "glob": "!b"},
			want:  "Found 2 files\n$P/a.go\n$P/.hidden/h.txt",
		},
		{
			name:  "searching below a folder",
			input: map[string]any{"pattern": "Foo", "path": "b"},
			want:  "Found 1 file\n$P/b/b.go",
		},
		{
			name:  "head_limit",
			input: map[string]any{"pattern": "Foo", "head_limit": 1},
			want:  "Found 1 file\n$P/a.go\n\n[Showing the first 1 results (head_limit); more were found]",
		},
		{
			name:  "multiline",
			input: map[string]any{"pattern": `Foo\(\) \{\}\n\n//`, "output_mode": "content", "multiline": true},
			want:  "$P/a.go:3:func Foo() {}\n$P/a.go:4:\n$P/a.go:5:// foo again",
		},
		{
			name:  "pattern starting with a dash",
			input: map[string]any{"pattern": "-binary", "output_mode": "content"},
			want:  "No matches found",
		},
		{
			name:  "no files",
			input: map[string]any{"pattern": "absent"},
			want:  "No files found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := searchTree(t)
			if p, ok := tt.input["path"].(string); ok {
				tt.input["path"] = strings.ReplaceAll(p, "$P", env.ProjectDir)
			}
			r := call(t, Grep{NoRipgrep: true}, env, tt.input)
			if r.IsError {
				t.Fatal(text(t, r))
			}
			want := strings.ReplaceAll(tt.want, "$P", env.ProjectDir)
			if diff := cmp.Diff(want, text(t, r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrepDetail(t *testing.T) {
	env := searchTree(t)
	p := env.ProjectDir
	tests := []struct {
		input map[string]any
		want  map[string]any
	}{
		{
			map[string]any{"pattern": "Foo", "type": "go"},
			map[string]any{"mode": "files_with_matches", "numFiles": 2.0, "filenames": []any{p + "/a.go", p + "/b/b.go"}},
		},
		{
			map[string]any{"pattern": "Foo", "output_mode": "content", "path": "b"},
			map[string]any{"mode": "content", "numFiles": 0.0, "filenames": []any{}, "content": p + "/b/b.go:2:// TODO: call Foo", "numLines": 1.0},
		},
		{
			map[string]any{"pattern": "Foo", "output_mode": "count", "type": "go", "head_limit": 1},
			map[string]any{"mode": "count", "numFiles": 1.0, "filenames": []any{p + "/a.go"}, "content": p + "/a.go:2", "numMatches": 2.0, "appliedLimit": 1.0},
		},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := call(t, Grep{NoRipgrep: true}, env, tt.input)
			if diff := cmp.Diff(tt.want, detail(t, r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrepLongLines(t *testing.T) {
	env := newEnv(t)
	writeTestFile(t, filepath.Join(env.ProjectDir, "min.js"), "Foo"+strings.Repeat("x", GrepMaxColumns)+"Foo\nFoo short\n")
	r := call(t, Grep{NoRipgrep: true}, env, map[string]any{"pattern": "Foo", "output_mode": "content", "path": "min.js"})
	if want := "1:[Omitted long line with 2 matches]\n2:Foo short"; text(t, r) != want {
		t.Errorf("got %q, want %q", text(t, r), want)
	}
}

func TestGrepOutputCap(t *testing.T) {
	env := newEnv(t)
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "match line %d\n", i)
	}
	writeTestFile(t, filepath.Join(env.ProjectDir, "big.txt"), b.String())
	r := call(t, Grep{NoRipgrep: true}, env, map[string]any{"pattern": "match", "output_mode": "content"})
	got := text(t, r)
	if len(got) > GrepMaxOutput+300 || !strings.Contains(got, "more lines not shown") {
		t.Errorf("output is %d bytes, ends %q", len(got), got[max(0, len(got)-200):])
	}
}

func TestGrepErrors(t *testing.T) {
	env := searchTree(t)
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"bad regexp", map[string]any{"pattern": "a("}, "invalid regular expression"},
		{"missing path", map[string]any{"pattern": "a", "path": "nope"}, "Path does not exist"},
		{"unknown type", map[string]any{"pattern": "a", "type": "cobol85"}, "unknown file type"},
		{"bad mode", map[string]any{"pattern": "a", "output_mode": "lines"}, `"output_mode" must be`},
		{"no pattern", map[string]any{"path": "."}, `"pattern" is missing`},
		{"negative context", map[string]any{"pattern": "a", "-A": -1}, "cannot be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, Grep{NoRipgrep: true}, env, tt.input)
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
		})
	}
}

func TestSplitGlobs(t *testing.T) {
	got := splitGlobs("*.go, *.md  src/**/*.{ts,tsx} !vendor")
	want := []string{"*.go", "*.md", "src/**/*.{ts,tsx}", "!vendor"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRipgrepArgs(t *testing.T) {
	q := grepQuery{
		pattern: "-x", root: "/p", mode: modeContent, lineNumbers: true, ignoreCase: true,
		multiline: true, before: 2, after: 2, fileType: "go", globs: []string{"*.go", "!a.go"},
	}
	want := []string{
		"--hidden", "--glob", "!.git", "--glob", "!.svn", "--glob", "!.hg", "--glob", "!.bzr", "--glob", "!.jj", "--glob", "!.sl",
		"--max-columns", "500", "-U", "--multiline-dotall", "-i", "-n", "-C", "2",
		"-e", "-x", "--type", "go", "--glob", "*.go", "--glob", "!a.go", "/p",
	}
	if diff := cmp.Diff(want, ripgrepArgs(q)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestGrepRunsRipgrep runs Grep against a stand-in rg that checks it is
// called as ripgrep would be and answers as ripgrep does.
func TestGrepRunsRipgrep(t *testing.T) {
	env := searchTree(t)
	p := env.ProjectDir
	fake := filepath.Join(t.TempDir(), "rg")
	script := `#!/bin/sh
for last; do :; done
case "$*" in
*absent*) exit 1 ;;
*broken*) echo "regex parse error" >&2; exit 2 ;;
*-l*) printf '%s\n%s\n' "$last/b/b.go" "$last/a.go" ;;
esac
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	g := Grep{Ripgrep: fake}
	if got, want := text(t, call(t, g, env, map[string]any{"pattern": "Foo"})), "Found 2 files\n"+p+"/a.go\n"+p+"/b/b.go"; got != want {
		t.Errorf("got %q, want %q (sorted newest first)", got, want)
	}
	if got := text(t, call(t, g, env, map[string]any{"pattern": "absent"})); got != "No files found" {
		t.Errorf("no match: got %q", got)
	}
	r := call(t, g, env, map[string]any{"pattern": "broken"})
	if !r.IsError || !strings.Contains(text(t, r), "regex parse error") {
		t.Errorf("rg error: got %q", text(t, r))
	}
}

// TestGrepSameAsRipgrep checks that the built-in search finds what
// ripgrep finds; it runs where rg is installed.
func TestGrepSameAsRipgrep(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
	env := searchTree(t)
	for _, input := range []map[string]any{
		{"pattern": "Foo"},
		{"pattern": "foo", "-i": true},
		{"pattern": "Foo", "output_mode": "count"},
		{"pattern": "Foo", "output_mode": "content", "glob": "*.go"},
		{"pattern": "Foo", "output_mode": "content", "path": "a.go", "-C": 1},
		{"pattern": "Foo", "type": "go"},
		{"pattern": `Foo\(\) \{\}\n\n//`, "output_mode": "content", "multiline": true},
	} {
		rg := text(t, call(t, Grep{}, env, input))
		builtin := text(t, call(t, Grep{NoRipgrep: true}, env, input))
		// ripgrep prints files in no set order in content and count modes.
		if diff := cmp.Diff(sortedLines(rg), sortedLines(builtin)); diff != "" {
			t.Errorf("%v (-rg +built-in):\n%s", input, diff)
		}
	}
}

func sortedLines(s string) []string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return lines
}
