package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/tool"
)

// stateNote ends the result of a successful Write or Edit: the model
// already knows what the file holds, so reading it back wastes context.
const stateNote = " (file state is current in your context — no need to Read it back)"

// now reads env's clock.
func now(env *tool.Env) time.Time {
	if env.Now == nil {
		return time.Now()
	}
	return env.Now()
}

// absFile checks that p is an absolute path and returns it cleaned.
func absFile(env *tool.Env, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("file_path must be an absolute path, got %q (the working directory is %s)", p, env.Cwd())
	}
	return filepath.Clean(p), nil
}

// searchRoot resolves an optional path parameter of Grep and Glob: empty
// means the working directory, a relative path is taken from it.
func searchRoot(env *tool.Env, p string) string {
	switch {
	case p == "":
		return env.Cwd()
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	default:
		return filepath.Join(env.Cwd(), p)
	}
}

// checkFresh enforces SPEC F5 for a file that exists: the model must have
// read it, and it must not have changed on disk since. partialOK allows a
// read that covered only part of the file (enough for Edit, which changes
// only what the model quotes; not for Write, which replaces everything).
func checkFresh(env *tool.Env, path string, fi fs.FileInfo, partialOK bool) error {
	seen, ok := env.Files.Seen(path)
	if !ok {
		return fmt.Errorf("%s has not been read yet. Read it first before changing it", path)
	}
	if !seen.ModTime.Equal(fi.ModTime()) || seen.Size != fi.Size() {
		return fmt.Errorf("%s has been modified since it was last read (by the user, a formatter or another program). Read it again before changing it", path)
	}
	if seen.Partial && !partialOK {
		return fmt.Errorf("only part of %s has been read. Read the whole file before overwriting it, or change it with Edit", path)
	}
	return nil
}

// recordSeen notes that the model knows path as it is now on disk.
func recordSeen(env *tool.Env, path string, partial bool) {
	if fi, err := os.Stat(path); err == nil {
		env.Files.Saw(path, tool.FileSeen{ModTime: fi.ModTime(), Size: fi.Size(), Partial: partial})
	}
}

// writeFile replaces path's content atomically, keeping its mode (and
// writing through a symbolic link to its target), after giving
// env.BeforeChange the chance to back the old content up. Missing parent
// folders are created.
func writeFile(env *tool.Env, path string, data []byte) error {
	if env.BeforeChange != nil {
		if err := env.BeforeChange(path); err != nil {
			return fmt.Errorf("backing up %s before the change: %w", path, err)
		}
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return renameio.WriteFile(target, data, 0o644, renameio.WithExistingPermissions())
}

// hunk is one hunk of a structuredPatch as Claude Code records it: line
// numbers are 1-based and lines carry a " ", "-" or "+" prefix.
type hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// noNewline marks a diff line that lacks a final newline.
const noNewline = `\ No newline at end of file`

// structuredPatch returns the line diff of before and after with three
// lines of context, never nil.
func structuredPatch(before, after string) []hunk {
	out := []hunk{}
	edits := udiff.Lines(before, after)
	if len(edits) == 0 {
		return out
	}
	u, err := udiff.ToUnifiedDiff("", "", before, edits, 3)
	if err != nil {
		return out
	}
	for _, h := range u.Hunks {
		oh := hunk{OldStart: h.FromLine, NewStart: h.ToLine, Lines: []string{}}
		for _, l := range h.Lines {
			prefix := " "
			switch l.Kind {
			case udiff.Delete:
				prefix = "-"
				oh.OldLines++
			case udiff.Insert:
				prefix = "+"
				oh.NewLines++
			default:
				oh.OldLines++
				oh.NewLines++
			}
			text, complete := strings.CutSuffix(l.Content, "\n")
			oh.Lines = append(oh.Lines, prefix+text)
			if !complete {
				oh.Lines = append(oh.Lines, noNewline)
			}
		}
		out = append(out, oh)
	}
	return out
}
