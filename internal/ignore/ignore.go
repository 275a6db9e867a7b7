// Package ignore reads the .gitignore rules of a work tree as git applies
// them, for the walks that skip ignored files (Grep, Glob, the file
// history's shadow of the project). It only reads files; it never runs git.
package ignore

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/cairn-dev/cairn/internal/gitinfo"
)

// Above returns the top of the git work tree holding root ("" outside
// one) and the rules that apply to root's entries from above it:
// .git/info/exclude and the .gitignore files from the top down to root's
// parent.
func Above(root string) (top string, ps []gitignore.Pattern) {
	top = gitinfo.Root(root)
	if top == "" {
		return "", nil
	}
	ps = ReadFile(filepath.Join(top, ".git", "info", "exclude"), nil)
	rel, _ := filepath.Rel(top, root)
	dir := top
	for _, elem := range Split(rel) {
		ps = append(ps, ReadFile(filepath.Join(dir, ".gitignore"), Domain(top, dir))...)
		dir = filepath.Join(dir, elem)
	}
	return top, ps
}

// Domain returns dir's path elements from the work tree's top, the
// domain of the rules in dir/.gitignore; nil outside a work tree.
func Domain(top, dir string) []string {
	if top == "" {
		return nil
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil {
		return nil
	}
	return Split(rel)
}

// ReadFile parses a gitignore-format file whose rules apply below domain;
// a missing file has none.
func ReadFile(path string, domain []string) []gitignore.Pattern {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// Split splits a relative path into its elements ("." has none).
func Split(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}
