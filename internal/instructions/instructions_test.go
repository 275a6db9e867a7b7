package instructions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tree writes files (path relative to root → content) and returns root.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// opts looks only inside root: home, managed files and the repository
// root all live there.
func opts(root string) Options {
	return Options{
		Cwd: filepath.Join(root, "repo", "app"), Home: filepath.Join(root, "home"), CairnHome: filepath.Join(root, "cairn"),
		Managed: []string{filepath.Join(root, "etc", "CLAUDE.md")}, ManagedRules: []string{filepath.Join(root, "etc", "rules")},
	}
}

func paths(root string, files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimPrefix(f.Path, root+"/"))
	}
	return out
}

func TestLoadOrder(t *testing.T) {
	root := tree(t, map[string]string{
		"etc/CLAUDE.md":                    "managed",
		"home/.claude/CLAUDE.md":           "user",
		"home/.claude/rules/style.md":      "user rule",
		"cairn/CLAUDE.md":                  "cairn user",
		"repo/.git/HEAD":                   "ref: refs/heads/main",
		"repo/CLAUDE.md":                   "repo root",
		"repo/CLAUDE.local.md":             "repo local",
		"repo/app/CLAUDE.md":               "app",
		"repo/app/.claude/CLAUDE.md":       "app dot claude",
		"repo/app/AGENTS.md":               "agents",
		"repo/app/CAIRN.md":                "cairn file",
		"repo/app/.claude/rules/b.md":      "rule b",
		"repo/app/.claude/rules/x/a.md":    "rule x/a",
		"repo/app/.cairn/rules/c.md":       "rule c",
		"repo/app/CLAUDE.local.md":         "app local",
		"CLAUDE.md":                        "above the repository: not loaded",
		"repo/app/sub/CLAUDE.md":           "nested: not loaded at start",
		"repo/app/.claude/rules/go.md":     "---\npaths:\n  - \"**/*.go\"\n---\nGo rule",
		"repo/app/.claude/rules/notes.txt": "not markdown",
	})
	set := Load(opts(root))
	want := []string{
		"etc/CLAUDE.md",
		"home/.claude/CLAUDE.md", "home/.claude/rules/style.md",
		"cairn/CLAUDE.md",
		"repo/CLAUDE.md", "repo/CLAUDE.local.md",
		"repo/app/CLAUDE.md", "repo/app/.claude/CLAUDE.md", "repo/app/AGENTS.md", "repo/app/CAIRN.md",
		"repo/app/.claude/rules/b.md", "repo/app/.claude/rules/x/a.md", "repo/app/.cairn/rules/c.md",
		"repo/app/CLAUDE.local.md",
	}
	if diff := cmp.Diff(want, paths(root, set.Files)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"repo/app/.claude/rules/go.md"}, paths(root, set.Conditional)); diff != "" {
		t.Errorf("conditional (-want +got):\n%s", diff)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings: %q", set.Warnings)
	}
	kinds := map[string]Kind{}
	for _, f := range set.Files {
		kinds[strings.TrimPrefix(f.Path, root+"/")] = f.Kind
	}
	if kinds["etc/CLAUDE.md"] != Managed || kinds["cairn/CLAUDE.md"] != User || kinds["repo/CLAUDE.md"] != Project || kinds["repo/app/CLAUDE.local.md"] != Local {
		t.Errorf("kinds %v", kinds)
	}
	text := Render(set.Files)
	for _, want := range []string{
		"Contents of " + root + "/repo/CLAUDE.md (project instructions, checked into the codebase):\n\nrepo root",
		"Contents of " + root + "/repo/app/CLAUDE.local.md (user's private project instructions, not checked in):\n\napp local",
		"Contents of " + root + "/home/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nuser",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered text lacks %q", want)
		}
	}
	if !strings.HasPrefix(text, "Codebase and user instructions are shown below.") {
		t.Errorf("rendered text starts %q", text[:40])
	}
}

func TestIncludes(t *testing.T) {
	root := tree(t, map[string]string{
		"repo/.git/HEAD": "",
		"repo/app/CLAUDE.md": "Follow @./style.md and @docs/api.md, also @~/personal.md and @" + "ABS" + "\n" +
			"Not `@inline.md` and not in a block:\n```\n@fenced.md\n```\n    @indented.md\n" +
			"mail me at someone@example.com, ask @bob, see @missing/file.md\n" +
			"@sp\\ ace.md\n",
		"repo/app/style.md":    "style, which includes @nested.md",
		"repo/app/nested.md":   "nested",
		"repo/app/docs/api.md": "api, back to @../CLAUDE.md (a cycle)",
		"home/personal.md":     "personal",
		"abs.md":               "absolute",
		"repo/app/inline.md":   "must not load",
		"repo/app/fenced.md":   "must not load",
		"repo/app/indented.md": "must not load",
		"repo/app/sp ace.md":   "escaped space",
	})
	claude := filepath.Join(root, "repo/app/CLAUDE.md")
	data, _ := os.ReadFile(claude)
	os.WriteFile(claude, []byte(strings.Replace(string(data), "ABS", filepath.Join(root, "abs.md"), 1)), 0o644)
	set := Load(opts(root))
	want := []string{"repo/app/CLAUDE.md", "repo/app/style.md", "repo/app/nested.md", "repo/app/docs/api.md", "home/personal.md", "abs.md", "repo/app/sp ace.md"}
	if diff := cmp.Diff(want, paths(root, set.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, f := range set.Files[1:] {
		if f.IncludedBy == "" || f.Kind != Project {
			t.Errorf("%s: included by %q, kind %s", f.Path, f.IncludedBy, f.Kind)
		}
	}
	joined := strings.Join(set.Warnings, "\n")
	if !strings.Contains(joined, "include cycle") || !strings.Contains(joined, "@missing/file.md names no file") {
		t.Errorf("warnings %q", set.Warnings)
	}
	if strings.Contains(joined, "@bob") || strings.Contains(joined, "example.com") {
		t.Errorf("a mention or an e-mail address was taken for an include: %q", set.Warnings)
	}
}

func TestIncludeDepthLimit(t *testing.T) {
	files := map[string]string{"repo/.git/HEAD": "", "repo/app/CLAUDE.md": "@f1.md"}
	for i := 1; i <= 7; i++ {
		files[filepath.Join("repo/app", "f"+string(rune('0'+i))+".md")] = "level @f" + string(rune('0'+i+1)) + ".md"
	}
	root := tree(t, files)
	set := Load(opts(root))
	// CLAUDE.md plus five hops of includes.
	if got := len(set.Files); got != 6 {
		t.Errorf("%d files load, want 6: %v", got, paths(root, set.Files))
	}
	if !strings.Contains(strings.Join(set.Warnings, "\n"), "at most 5 deep") {
		t.Errorf("no depth warning: %q", set.Warnings)
	}
}

func TestHugeFileIsCut(t *testing.T) {
	root := tree(t, map[string]string{"repo/.git/HEAD": "", "repo/app/AGENTS.md": "small"})
	big := strings.Repeat("All work and no play makes a dull agent.\n", 10<<20/41)
	os.WriteFile(filepath.Join(root, "repo/app/CLAUDE.md"), []byte(big), 0o644)
	start := time.Now()
	set := Load(opts(root))
	took := time.Since(start)
	if len(set.Files) != 2 {
		t.Fatalf("files %v", paths(root, set.Files))
	}
	f := set.Files[0]
	if !f.Truncated || len(f.Content) > DefaultMaxFileBytes+200 || f.Size < 10<<20-100 {
		t.Errorf("truncated %v, content %d bytes, size %d", f.Truncated, len(f.Content), f.Size)
	}
	if !strings.Contains(f.Content, "[cairn: this file is 10.0 MB; only its start is loaded here.") {
		t.Errorf("no note at the end: %q", f.Content[len(f.Content)-200:])
	}
	if !strings.Contains(strings.Join(set.Warnings, "\n"), "only its first 64 KB load") {
		t.Errorf("warnings %q", set.Warnings)
	}
	if set.Files[1].Content != "small" {
		t.Error("the next file must load whole")
	}
	t.Logf("a 10 MB file loads in %v", took)
}

func TestTotalLimit(t *testing.T) {
	root := tree(t, map[string]string{"repo/.git/HEAD": "", "repo/app/.keep": ""})
	chunk := strings.Repeat("x\n", 30<<10) // 60 KB each
	for _, n := range []string{"CLAUDE.md", "AGENTS.md", "CAIRN.md", "CLAUDE.local.md"} {
		os.WriteFile(filepath.Join(root, "repo/app", n), []byte(chunk), 0o644)
	}
	set := Load(opts(root))
	total := 0
	for _, f := range set.Files {
		total += len(f.Content)
	}
	if total > DefaultMaxTotalBytes+200 {
		t.Errorf("%d bytes load, limit %d", total, DefaultMaxTotalBytes)
	}
	if len(set.Files) != 4 || !set.Files[3].Truncated {
		t.Errorf("files %v", paths(root, set.Files))
	}
}

func TestInvalidFrontMatter(t *testing.T) {
	root := tree(t, map[string]string{
		"repo/.git/HEAD":                "",
		"repo/app/.claude/rules/bad.md": "---\npaths: [unclosed\n---\nBad rule body",
		"repo/app/.claude/rules/odd.md": "---\npaths: {a: 1}\n---\nOdd rule body",
		"repo/app/CLAUDE.md":            "good",
	})
	set := Load(opts(root))
	if diff := cmp.Diff([]string{"repo/app/CLAUDE.md", "repo/app/.claude/rules/bad.md", "repo/app/.claude/rules/odd.md"}, paths(root, set.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if set.Files[1].Content != "Bad rule body" {
		t.Errorf("bad rule content %q", set.Files[1].Content)
	}
	if len(set.Warnings) != 2 || !strings.Contains(set.Warnings[0], "bad.md: invalid front matter") || !strings.Contains(set.Warnings[1], "odd.md") {
		t.Errorf("warnings %q", set.Warnings)
	}
}

func TestRulesAndNested(t *testing.T) {
	root := tree(t, map[string]string{
		"repo/.git/HEAD":                    "",
		"repo/app/CLAUDE.md":                "top",
		"repo/app/.claude/rules/go.md":      "---\npaths:\n  - \"src/**/*.go\"\n---\nGo rule @../../docs/go-more.md",
		"repo/app/docs/go-more.md":          "more go",
		"repo/app/.claude/rules/tsx.md":     "---\npaths: \"*.tsx, *.jsx\"\n---\nReact rule",
		"repo/app/src/pkg/CLAUDE.md":        "pkg instructions",
		"repo/app/src/CLAUDE.local.md":      "src local",
		"repo/app/src/.claude/rules/sql.md": "---\npaths: [\"**/*.sql\"]\n---\nSQL rule",
		"repo/app/src/pkg/a.go":             "package a",
		"repo/app/src/pkg/q.sql":            "select 1",
	})
	tr := NewTracker(opts(root))
	start := tr.Start()
	if diff := cmp.Diff([]string{"repo/app/CLAUDE.md"}, paths(root, start)); diff != "" {
		t.Errorf("start (-want +got):\n%s", diff)
	}
	got := tr.Touch(filepath.Join(root, "repo/app/src/pkg/a.go"))
	want := []string{"repo/app/src/CLAUDE.local.md", "repo/app/src/pkg/CLAUDE.md", "repo/app/.claude/rules/go.md", "repo/app/docs/go-more.md"}
	if diff := cmp.Diff(want, paths(root, got)); diff != "" {
		t.Errorf("first read (-want +got):\n%s", diff)
	}
	if !strings.Contains(got[2].Reason, "matched its paths: src/**/*.go") || !got[0].Nested {
		t.Errorf("reasons: %q, nested %v", got[2].Reason, got[0].Nested)
	}
	if again := tr.Touch(filepath.Join(root, "repo/app/src/pkg/a.go")); len(again) != 0 {
		t.Errorf("a second read loads %v", paths(root, again))
	}
	if sql := tr.Touch("src/pkg/q.sql"); len(sql) != 1 || !strings.HasSuffix(sql[0].Path, "sql.md") {
		t.Errorf("sql rule: %v", paths(root, sql))
	}
	if x := tr.Touch(filepath.Join(root, "repo/app/ui/x.tsx")); len(x) != 1 || x[0].Content != "React rule" {
		t.Errorf("tsx rule: %v", paths(root, x))
	}
	if n := len(tr.Current()); n != 7 {
		t.Errorf("%d files in force, want 7", n)
	}
}

func TestRefresh(t *testing.T) {
	root := tree(t, map[string]string{"repo/.git/HEAD": "", "repo/app/CLAUDE.md": "one", "repo/app/AGENTS.md": "agents"})
	tr := NewTracker(opts(root))
	tr.Start()
	if c, r := tr.Refresh(); len(c)+len(r) != 0 {
		t.Fatalf("nothing changed, yet %v %v", c, r)
	}
	claude := filepath.Join(root, "repo/app/CLAUDE.md")
	os.WriteFile(claude, []byte("two, longer"), 0o644)
	os.Remove(filepath.Join(root, "repo/app/AGENTS.md"))
	os.WriteFile(filepath.Join(root, "repo/app/CLAUDE.local.md"), []byte("new local"), 0o644)
	changed, removed := tr.Refresh()
	if diff := cmp.Diff([]string{"repo/app/CLAUDE.md", "repo/app/CLAUDE.local.md"}, paths(root, changed)); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "repo/app/AGENTS.md")}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if c, r := tr.Refresh(); len(c)+len(r) != 0 {
		t.Errorf("second refresh: %v %v", c, r)
	}
	// A resumed session knows what its transcript showed the model.
	tr2 := NewTracker(opts(root))
	for p, h := range tr.Shown() {
		tr2.Saw(p, h)
	}
	if c, r := tr2.Refresh(); len(c)+len(r) != 0 {
		t.Errorf("resumed: %v %v", c, r)
	}
}

func TestMatches(t *testing.T) {
	r := File{Base: "/p", Globs: []string{"src/**/*.ts", "*.md", "docs/", "./lib/*.go"}}
	for path, want := range map[string]bool{
		"/p/src/a/b.ts": true, "/p/src/b.ts": true, "/p/x/y/README.md": true, "/p/docs/a/b.txt": true,
		"/p/lib/a.go": true, "/p/lib/x/a.go": false, "/p/other.ts": false, "/q/src/a.ts": false, "/p/../p2/a.md": false,
	} {
		if _, got := r.Matches(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

// BenchmarkDiscoverDeep measures discovery in a tree 20 folders deep with
// a CLAUDE.md in each and 50 rule files (SPEC target: ≤ 10 ms).
func BenchmarkDiscoverDeep(b *testing.B) {
	files := map[string]string{"repo/.git/HEAD": ""}
	dir := "repo"
	for i := range 20 {
		dir = filepath.Join(dir, "d"+string(rune('a'+i)))
		files[filepath.Join(dir, "CLAUDE.md")] = "level instructions\n@./more.md\n"
		files[filepath.Join(dir, "more.md")] = "more"
	}
	for i := range 50 {
		body := "rule body"
		if i%2 == 0 {
			body = "---\npaths:\n  - \"src/**/*.go\"\n---\nconditional rule"
		}
		files[filepath.Join("repo", ".claude", "rules", "r"+string(rune('a'+i%26))+string(rune('a'+i/26))+".md")] = body
	}
	root := tree(b, files)
	o := opts(root)
	o.Cwd = filepath.Join(root, dir)
	b.ResetTimer()
	for b.Loop() {
		set := Load(o)
		if len(set.Files) != 40+25 || len(set.Conditional) != 25 {
			b.Fatalf("%d files, %d conditional", len(set.Files), len(set.Conditional))
		}
	}
}
