package gitinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestBranch(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(sub, 0o755)
	if got := Branch(sub); got != "HEAD" {
		t.Errorf("no HEAD file: %q", got)
	}
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/feature/x\n"), 0o644)
	if got := Branch(sub); got != "feature/x" {
		t.Errorf("Branch = %q", got)
	}
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("0123456789abcdef\n"), 0o644)
	if got := Branch(sub); got != "HEAD" {
		t.Errorf("detached: %q", got)
	}
	if Root(sub) != root {
		t.Errorf("Root = %q", Root(sub))
	}
	wt := t.TempDir()
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(root, ".git")+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	if got := Branch(wt); got != "main" {
		t.Errorf("worktree: %q", got)
	}
}

func TestTracked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	committed, loose := filepath.Join(dir, ".cairn", "settings.local.json"), filepath.Join(dir, ".claude", "settings.local.json")
	for _, f := range []string{committed, loose} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "add", ".cairn/settings.local.json").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	if !Tracked(committed) {
		t.Error("a staged file is not tracked")
	}
	if Tracked(loose) {
		t.Error("an untracked file is tracked")
	}
	if Tracked(filepath.Join(t.TempDir(), "settings.local.json")) {
		t.Error("a file outside a repository is tracked")
	}
}
