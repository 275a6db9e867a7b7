package ignore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

func TestAbove(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "a", "b")
	for _, d := range []string{filepath.Join(top, ".git", "info"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(top, ".git", "info", "exclude"), []byte("*.tmp\n"), 0o644)
	os.WriteFile(filepath.Join(top, ".gitignore"), []byte("# comment\n\nbuild/\n"), 0o644)
	os.WriteFile(filepath.Join(top, "a", ".gitignore"), []byte("*.log\r\n"), 0o644)
	gotTop, ps := Above(sub)
	if gotTop != top || len(ps) != 3 {
		t.Fatalf("Above = %q, %d rules", gotTop, len(ps))
	}
	m := gitignore.NewMatcher(ps)
	for path, want := range map[string]bool{"a/b/x.tmp": true, "a/b/x.log": true, "x.log": false, "a/b/x.go": false} {
		if got := m.Match(Split(path), false); got != want {
			t.Errorf("Match(%s) = %v, want %v", path, got, want)
		}
	}
	if got, _ := Above(t.TempDir()); got != "" {
		t.Errorf("outside a work tree: top %q", got)
	}
	if Split(".") != nil || len(Split("a/b")) != 2 || Domain("", "/x") != nil {
		t.Error("Split/Domain edge cases")
	}
}
