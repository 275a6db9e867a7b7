package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseAndEncode(t *testing.T) {
	m := Memory{Name: "db_tests", Description: "integration tests hit a real database: no mocks", Type: TypeFeedback,
		Body: "Use the real database in integration tests.\n\n**Why:** a mocked migration hid a broken one.\n**How to apply:** never mock the DB layer in tests/integration."}
	got, err := Parse(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	bad := map[string]string{
		"no front matter":   "just text",
		"unclosed":          "---\nname: x\n",
		"invalid yaml":      "---\nname: [x\n---\nbody",
		"no name":           "---\ndescription: d\ntype: user\n---\n",
		"no description":    "---\nname: n\ntype: user\n---\n",
		"unknown type":      "---\nname: n\ndescription: d\ntype: opinion\n---\n",
		"type is a list":    "---\nname: n\ndescription: d\ntype: [user]\n---\n",
		"front is a scalar": "---\njust a string\n---\n",
	}
	for name, text := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(text)); !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v, want ErrMalformed", err)
			}
		})
	}
	// Colons and quotes in values survive encoding.
	odd := Memory{Name: "x: y", Description: `say "hi" # not a comment`, Type: TypeUser, Body: "b"}
	if got, err := Parse(odd.Encode()); err != nil || got != odd {
		t.Errorf("odd values: %+v, %v", got, err)
	}
}

func TestIndexLimits(t *testing.T) {
	dir := t.TempDir()
	ok := strings.Repeat("- [a](a.md) — a memory\n", MaxIndexLines)
	if err := WriteIndex(dir, ok); err != nil {
		t.Fatalf("200 lines: %v", err)
	}
	var ie *IndexError
	if err := WriteIndex(dir, ok+"- one more\n"); !errors.As(err, &ie) || ie.Lines != 201 {
		t.Errorf("201 lines: %v", err)
	}
	if err := WriteIndex(dir, strings.Repeat("x", MaxIndexBytes+1)); !errors.As(err, &ie) || !strings.Contains(err.Error(), "at most 200 lines and 25000 bytes") {
		t.Errorf("25 KB: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, IndexName))
	if string(got) != ok {
		t.Error("a refused write changed the index")
	}
	// A hand-written index over the limits loads cut, with a note.
	os.WriteFile(filepath.Join(dir, IndexName), []byte(strings.Repeat("- line\n", 300)), 0o644)
	text, warn := ReadIndex(dir)
	if lineCount(text) != MaxIndexLines+1 || warn == "" || !strings.Contains(text, "was cut here") {
		t.Errorf("%d lines, warning %q", lineCount(text), warn)
	}
}

func TestCheckWrite(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, IndexName)
	os.WriteFile(index, []byte(strings.Repeat("- [a](a.md) — a\n", 199)), 0o644)
	in := func(v map[string]any) json.RawMessage { b, _ := json.Marshal(v); return b }
	tests := []struct {
		name, tool string
		input      json.RawMessage
		refuse     bool
	}{
		{"write within limits", "Write", in(map[string]any{"file_path": index, "content": "- [a](a.md) — a\n"}), false},
		{"write too long", "Write", in(map[string]any{"file_path": index, "content": strings.Repeat("x\n", 201)}), true},
		{"edit adds one line", "Edit", in(map[string]any{"file_path": index, "old_string": "- [a](a.md) — a\n", "new_string": "- [a](a.md) — a\n- [b](b.md) — b\n"}), false},
		{"edit replace all doubles it", "Edit", in(map[string]any{"file_path": index, "old_string": "- [a](a.md) — a\n", "new_string": "- [a](a.md) — a\n- [b](b.md) — b\n", "replace_all": true}), true},
		{"another file", "Write", in(map[string]any{"file_path": filepath.Join(dir, "a.md"), "content": strings.Repeat("x\n", 500)}), false},
		{"another tool", "Bash", in(map[string]any{"command": "true"}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckWrite(dir, tc.tool, tc.input); (err != nil) != tc.refuse {
				t.Errorf("err %v, refuse %v", err, tc.refuse)
			}
		})
	}
}

func TestWrote(t *testing.T) {
	dir := "/h/projects/p/memory"
	for path, want := range map[string]bool{
		dir + "/a.md": true, dir + "/MEMORY.md": true, dir: false, "/h/projects/p/other.md": false, dir + "/../x.md": false,
	} {
		in, _ := json.Marshal(map[string]string{"file_path": path})
		if got := Wrote(dir, "Write", in); got != want {
			t.Errorf("%s: %v", path, got)
		}
	}
}

// writeMemoriesErr writes n memory files; the first 300 are modified i
// minutes before base, so file 0 is the newest, and the rest keep the
// time they were written, earlier still.
func writeMemoriesErr(dir string, n int, base time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		m := Memory{Name: fmt.Sprintf("m%05d", i), Description: fmt.Sprintf("memory number %d", i), Type: TypeProject, Body: "body"}
		p := filepath.Join(dir, fmt.Sprintf("m%05d.md", i))
		if err := os.WriteFile(p, m.Encode(), 0o644); err != nil {
			return err
		}
		if i < 300 {
			mod := base.Add(-time.Duration(i) * time.Minute)
			if err := os.Chtimes(p, mod, mod); err != nil {
				return err
			}
		}
	}
	return nil
}

// tenThousand is a folder of 10,000 memory files shared by the tests
// that need one (writing them is slow on a busy machine); tests copy
// nothing and add nothing to it.
var tenThousand = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "cairn-memory-10k")
	if err != nil {
		return "", err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	return dir, writeMemoriesErr(dir, 10_000, time.Now().Add(24*time.Hour))
})

var cleanups []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}

func TestScanTenThousand(t *testing.T) {
	dir, err := tenThousand()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	hs, warnings, err := Scan(context.Background(), dir, MaxScan)
	took := time.Since(start)
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	if len(hs) != MaxScan || hs[0].File != "m00000.md" || hs[MaxScan-1].File != "m00199.md" {
		t.Fatalf("%d headers, first %s", len(hs), hs[0].File)
	}
	if hs[0].Name != "m00000" || hs[0].Type != TypeProject || !strings.HasPrefix(hs[0].Head, "---\nname: m00000") {
		t.Errorf("header %+v", hs[0])
	}
	t.Logf("scanned 10,000 files for %d headers in %v", len(hs), took)
	if took > 2*time.Second {
		t.Errorf("scan took %v", took)
	}
}

func TestScanSkipsMalformed(t *testing.T) {
	dir := t.TempDir()
	Save(dir, "good.md", Memory{Name: "g", Description: "d", Type: TypeUser, Body: "b"})
	os.WriteFile(filepath.Join(dir, "none.md"), []byte("no front matter at all"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.md"), []byte("---\nname: [x\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "untyped.md"), []byte("---\nname: x\ndescription: y\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "huge.md"), []byte("---\nname: h\ndescription: "+strings.Repeat("x", 64<<10)+"\ntype: user\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, IndexName), []byte("- index"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a memory"), 0o644)
	hs, warnings, err := Scan(context.Background(), dir, MaxScan)
	if err != nil || len(hs) != 1 || hs[0].File != "good.md" {
		t.Fatalf("headers %+v, %v", hs, err)
	}
	if len(warnings) != 4 {
		t.Errorf("warnings %q", warnings)
	}
	for _, w := range warnings {
		if !strings.Contains(w, "skipped") {
			t.Errorf("warning %q", w)
		}
	}
}

func TestAllowRules(t *testing.T) {
	got := AllowRules("/h/p[1]/memory")
	want := []string{`Read(//h/p\[1\]/memory/**)`, `Edit(//h/p\[1\]/memory/**)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestPromptHasRulesAndIndex(t *testing.T) {
	dir := t.TempDir()
	if p := Prompt(dir); !strings.Contains(p, "(empty: no memories are saved yet)") || !strings.Contains(p, "## What not to save") {
		t.Errorf("empty prompt:\n%s", p)
	}
	WriteIndex(dir, "- [role](role.md) — the user is a data scientist")
	p := Prompt(dir)
	for _, want := range []string{dir, "Git history", "fix recipes", "CLAUDE.md", "Ephemeral", "**Why:**", "**How to apply:**", "- [role](role.md) — the user is a data scientist"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}
