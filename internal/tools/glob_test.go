package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		name  string
		input map[string]any
		want  string // $P is the project folder
	}{
		{"top level only", map[string]any{"pattern": "*.go"}, "$P/a.go"},
		{"any depth, newest first", map[string]any{"pattern": "**/*.go"}, "$P/a.go\n$P/b/b.go"},
		{"braces", map[string]any{"pattern": "**/*.{md,txt}"}, "$P/b/c/notes.md\n$P/.hidden/h.txt"},
		{"below a path", map[string]any{"pattern": "**/*", "path": "b"}, "$P/b/b.go\n$P/b/c/notes.md"},
		{"relative pattern with a folder", map[string]any{"pattern": "b/*.go"}, "$P/b/b.go"},
		{"absolute pattern", map[string]any{"pattern": "$P/b/**/*.md"}, "$P/b/c/notes.md"},
		{"ignored files are left out", map[string]any{"pattern": "**/*.log"}, "No files found"},
		{"the .git folder is left out", map[string]any{"pattern": "**/config"}, "No files found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := searchTree(t)
			for k, v := range tt.input {
				tt.input[k] = strings.ReplaceAll(v.(string), "$P", env.ProjectDir)
			}
			r := call(t, Glob{}, env, tt.input)
			if r.IsError {
				t.Fatal(text(t, r))
			}
			if diff := cmp.Diff(strings.ReplaceAll(tt.want, "$P", env.ProjectDir), text(t, r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGlobNestedGitignore(t *testing.T) {
	env := newEnv(t)
	p := env.ProjectDir
	for _, f := range []string{".git/HEAD", "sub/.gitignore", "sub/keep.txt", "sub/gen/out.txt", "gen/top.txt", "sub/x.tmp"} {
		writeTestFile(t, filepath.Join(p, f), "")
	}
	writeTestFile(t, filepath.Join(p, ".gitignore"), "*.tmp\n")
	writeTestFile(t, filepath.Join(p, "sub/.gitignore"), "/gen/\n")
	// Searching from inside sub still applies the top .gitignore.
	for _, root := range []string{p, filepath.Join(p, "sub")} {
		r := call(t, Glob{}, env, map[string]any{"pattern": "**/*.{txt,tmp}", "path": root})
		got := r.Detail.(globDetail).Filenames
		var want []string
		if root == p {
			want = append(want, filepath.Join(p, "gen/top.txt"))
		}
		want = append(want, filepath.Join(p, "sub/keep.txt"))
		if diff := cmp.Diff(want, slices.Sorted(slices.Values(got))); diff != "" {
			t.Errorf("from %s (-want +got):\n%s", root, diff)
		}
	}
}

func TestGlobTruncated(t *testing.T) {
	env := newEnv(t)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range GlobMaxResults + 5 {
		p := filepath.Join(env.ProjectDir, fmt.Sprintf("f%03d.txt", i))
		writeTestFile(t, p, "")
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	r := call(t, Glob{}, env, map[string]any{"pattern": "*.txt"})
	d := r.Detail.(globDetail)
	if !d.Truncated || d.NumFiles != GlobMaxResults || len(d.Filenames) != GlobMaxResults {
		t.Errorf("detail = truncated %v, numFiles %d", d.Truncated, d.NumFiles)
	}
	if want := filepath.Join(env.ProjectDir, fmt.Sprintf("f%03d.txt", GlobMaxResults+4)); d.Filenames[0] != want {
		t.Errorf("first = %s, want the newest %s", d.Filenames[0], want)
	}
	if !strings.Contains(text(t, r), "(Results are truncated") {
		t.Errorf("no truncation note in %q", text(t, r)[len(text(t, r))-150:])
	}
	var generic map[string]any
	raw, _ := json.Marshal(r.Detail)
	_ = json.Unmarshal(raw, &generic)
	for _, k := range []string{"filenames", "durationMs", "numFiles", "truncated"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("detail lacks %q", k)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	env := searchTree(t)
	tests := []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"no pattern", map[string]any{}, `"pattern" is missing`},
		{"bad pattern", map[string]any{"pattern": "[a-"}, "not a valid glob pattern"},
		{"missing path", map[string]any{"pattern": "*", "path": "nope"}, "Path does not exist"},
		{"file as path", map[string]any{"pattern": "*", "path": "a.go"}, "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, Glob{}, env, tt.input)
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
		})
	}
}
