package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// GlobMaxResults is how many paths Glob returns at most.
const GlobMaxResults = 100

// Glob finds files by name pattern, newest first.
type Glob struct{}

var globSchema = schema(`{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "description": "The glob pattern, such as \"**/*.go\" or \"src/**/*.{ts,tsx}\""},
		"path": {"type": "string", "description": "The folder to search in; leave it out to search the working directory"}
	},
	"required": ["pattern"],
	"additionalProperties": false
}`)

// Spec describes Glob to the model.
func (Glob) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Glob",
		Description: `Finds files whose paths match a glob pattern, fast, in a codebase of any size.

- Patterns are matched against paths relative to the search folder: "*.go" matches only files directly in it, "**/*.go" matches at any depth, "src/**/*_test.go" below src, "*.{js,ts}" either extension.
- Leave path out to search the working directory; do not pass "undefined" or "null".
- Files ignored by .gitignore and version-control folders are skipped.
- Returns absolute paths, most recently modified first, at most ` + strconv.Itoa(GlobMaxResults) + `.
- Use it to find files by name. To find files by what they contain, use Grep. For an open-ended search that takes many rounds, plan several searches and run independent ones in parallel.`,
		InputSchema: globSchema,
	}
}

// ReadOnly reports true.
func (Glob) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (Glob) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports true.
func (Glob) ConcurrencySafe(json.RawMessage) bool { return true }

// globDetail is Glob's toolUseResult.
type globDetail struct {
	Filenames  []string `json:"filenames"`
	DurationMs int64    `json:"durationMs"`
	NumFiles   int      `json:"numFiles"`
	Truncated  bool     `json:"truncated"`
}

// Run finds the files.
func (Glob) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("Glob", input, "pattern", "path")
	pattern := a.str("pattern", true)
	dir := a.str("path", false)
	if a.err == nil && pattern == "" {
		a.err = errors.New(`parameter "pattern" is empty`)
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	start := now(env)
	root := searchRoot(env, dir)
	pattern = filepath.ToSlash(pattern)
	if filepath.IsAbs(pattern) {
		// An absolute pattern names its own folder: search from its fixed
		// leading part.
		base, rest := doublestar.SplitPattern(pattern)
		root, pattern = filepath.FromSlash(base), rest
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return failf("%q is not a valid glob pattern", pattern), nil
	}
	switch fi, err := os.Stat(root); {
	case errors.Is(err, fs.ErrNotExist):
		return failf("Path does not exist: %s (the working directory is %s)", root, env.Cwd()), nil
	case err != nil:
		return failf("Cannot search %s: %v", root, err), nil
	case !fi.IsDir():
		return failf("%s is not a folder; give Glob a folder to search in", root), nil
	}

	var opt walkOptions
	if !strings.Contains(pattern, "**") {
		opt.maxDepth = strings.Count(pattern, "/") + 1
	}
	var found []fileMTime
	err := walkFiles(ctx, root, opt, func(path, rel string) error {
		if doublestar.MatchUnvalidated(pattern, rel) {
			found = append(found, fileMTime{path, mtimeOf(path)})
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return failf("Cannot search %s: %v", root, err), nil
	}
	sortNewestFirst(found)
	detail := globDetail{Filenames: []string{}, Truncated: len(found) > GlobMaxResults}
	for _, f := range found[:min(len(found), GlobMaxResults)] {
		detail.Filenames = append(detail.Filenames, f.path)
	}
	detail.NumFiles = len(detail.Filenames)
	detail.DurationMs = now(env).Sub(start).Milliseconds()

	text := "No files found"
	if len(detail.Filenames) > 0 {
		text = strings.Join(detail.Filenames, "\n")
	}
	if detail.Truncated {
		text += fmt.Sprintf("\n(Results are truncated: these are the %d most recently modified of %d. Use a more specific path or pattern.)", GlobMaxResults, len(found))
	}
	r := tool.Text(text)
	r.Detail = detail
	return r, nil
}

// TouchedPaths implements tool.PathToucher: the folder or file searched.
func (Glob) TouchedPaths(input json.RawMessage) []tool.PathUse { return searchUse(input) }

// Summary implements tool.Summarizer: the pattern, and where.
func (Glob) Summary(input json.RawMessage, rel func(string) string) string {
	return searchSummary(input, rel)
}

// Reobtainable implements tool.Reobtainable: the search can be run again.
func (Glob) Reobtainable() bool { return true }
