// Package gitinfo reads what cairn records about a repository — whether
// there is one, and the current branch — straight from .git, without
// running git, so start-up stays fast. Tracked is the exception: it asks
// git, for the rare file whose trust depends on it.
package gitinfo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Root returns the repository root above dir, or "" outside a repository.
func Root(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if parent := filepath.Dir(d); parent == d {
			return ""
		}
	}
}

// Branch returns the branch checked out in the repository holding dir,
// "HEAD" for a detached head or outside a repository (as Claude Code
// records it).
func Branch(dir string) string {
	root := Root(dir)
	if root == "" {
		return "HEAD"
	}
	gitDir := filepath.Join(root, ".git")
	if b, err := os.ReadFile(gitDir); err == nil {
		// A worktree or submodule: ".git" is a file naming the real folder.
		if p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			gitDir = p
		}
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "HEAD"
	}
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/"); ok {
		return ref
	}
	return "HEAD"
}

// Tracked reports whether the repository holding path tracks it (it is
// committed, or staged to be): a file that comes with a clone, which
// cairn must not trust as the person's own. Outside a repository, or
// without a git to ask, nothing is tracked.
func Tracked(path string) bool {
	root := Root(filepath.Dir(path))
	if root == "" {
		return false
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "git", "-C", root, "ls-files", "--error-unmatch", "--", rel).Run() == nil
}
