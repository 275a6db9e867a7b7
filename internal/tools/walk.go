package tools

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/ignore"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// vcsDirs are version-control folders that searches never enter.
var vcsDirs = []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}

// walkOptions tune walkFiles.
type walkOptions struct {
	// maxDepth, when positive, is how many path elements below the root a
	// file may have (1: only the root's own files).
	maxDepth int
}

// walkFiles calls fn for each regular file under root in lexical order,
// with rel its slash-separated path from root. Hidden files are included;
// version-control folders and symbolic links are skipped. Inside a git
// work tree, what .gitignore files (from the top of the work tree down) and
// .git/info/exclude ignore is skipped too, as ripgrep does. If root is a
// file, fn is called for it alone. An error from fn stops the walk.
func walkFiles(ctx context.Context, root string, opt walkOptions, fn func(path, rel string) error) error {
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fn(root, filepath.Base(root))
	}
	top, ps := ignore.Above(root)
	w := &walker{ctx: ctx, root: root, opt: opt, fn: fn, top: top}
	return w.visit(root, "", 0, ps)
}

type walker struct {
	ctx  context.Context
	root string
	top  string // top of the git work tree; "" outside one
	opt  walkOptions
	fn   func(path, rel string) error
}

// domain returns dir's path elements from the top of the work tree.
func (w *walker) domain(dir string) []string { return ignore.Domain(w.top, dir) }

func (w *walker) visit(dir, rel string, depth int, ps []gitignore.Pattern) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // unreadable folders are skipped, as ripgrep does
	}
	if w.top != "" {
		if more := ignore.ReadFile(filepath.Join(dir, ".gitignore"), w.domain(dir)); len(more) > 0 {
			ps = append(slices.Clip(ps), more...)
		}
	}
	var m gitignore.Matcher
	if len(ps) > 0 {
		m = gitignore.NewMatcher(ps)
	}
	base := w.domain(dir)
	for _, e := range entries {
		name := e.Name()
		isDir := e.IsDir()
		if isDir && slices.Contains(vcsDirs, name) {
			continue
		}
		if m != nil && m.Match(append(slices.Clip(base), name), isDir) {
			continue
		}
		path := filepath.Join(dir, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		switch {
		case isDir:
			if w.opt.maxDepth > 0 && depth+1 >= w.opt.maxDepth {
				continue
			}
			if err := w.visit(path, childRel, depth+1, ps); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if err := w.fn(path, childRel); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileMTime pairs a path with its modification time, for sorting results
// newest first.
type fileMTime struct {
	path  string
	mtime int64
}

// sortNewestFirst sorts files by modification time, newest first, and by
// path among equals.
func sortNewestFirst(files []fileMTime) {
	slices.SortFunc(files, func(a, b fileMTime) int {
		if a.mtime != b.mtime {
			if a.mtime > b.mtime {
				return -1
			}
			return 1
		}
		return strings.Compare(a.path, b.path)
	})
}

// mtimeOf returns path's modification time in nanoseconds, 0 if unknown.
func mtimeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}
