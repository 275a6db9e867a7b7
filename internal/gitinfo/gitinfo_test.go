package gitinfo

import (
	"os"
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
