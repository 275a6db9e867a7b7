package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/tool"
)

// replacement is one change an Edit or MultiEdit call asks for: old is
// replaced by new, once (old must then be unique) or everywhere.
type replacement struct {
	old, new string
	all      bool
}

// fileChange is what changeFile did to a file.
type fileChange struct {
	original string // the content before; "" for a new file
	updated  string
	created  bool
}

// checkReplacements refuses, before anything is read, replacements that
// cannot be meant: one that changes nothing, and (for several) one that
// would match text an earlier one inserts.
func checkReplacements(reps []replacement) error {
	for i, r := range reps {
		if r.old == r.new {
			return numbered(i, len(reps), errors.New("No changes to make: old_string and new_string are exactly the same."))
		}
		if r.old == "" {
			continue
		}
		for j, earlier := range reps[:i] {
			if strings.Contains(earlier.new, r.old) {
				return fmt.Errorf("the old_string of edit %d occurs in the new_string of edit %d. Edits apply in order, each to the text the previous ones left, so edit %d would change text this call inserts. Give old_string text that is in the file now, or merge the two edits", i+1, j+1, i+1)
			}
		}
	}
	return nil
}

// numbered prefixes err with the edit it concerns when a call has several.
func numbered(i, n int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("Edit %d of %d failed, so none was applied: %w", i+1, n, err)
}

// changeFile applies reps in order to the file at path, in memory, and
// writes the result once (atomically, after env.BeforeChange): all of
// them or none. The file must have been read and be unchanged since
// (SPEC F5); a missing file is created when the first replacement's old
// string is empty. An error is a refusal for the model to read; the file
// is untouched when one is returned.
func changeFile(env *tool.Env, path string, reps []replacement) (fileChange, error) {
	var c fileChange
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if reps[0].old != "" {
			return c, fmt.Errorf("File does not exist: %s (the working directory is %s). To create a file, use Write", path, env.Cwd())
		}
		c.created = true
	case err != nil:
		return c, fmt.Errorf("Cannot edit %s: %v", path, err)
	case fi.IsDir():
		return c, fmt.Errorf("%s is a directory; give the path of a file", path)
	default:
		if err := checkFresh(env, path, fi, true); err != nil {
			return c, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("Cannot read %s: %v", path, err)
		}
		c.original = string(data)
	}
	updated, err := applyReplacements(c.original, path, reps)
	if err != nil {
		return c, err
	}
	if !c.created && updated == c.original {
		return c, fmt.Errorf("The edits leave %s exactly as it was, so nothing was written", path)
	}
	seen, _ := env.Files.Seen(path)
	if err := writeFile(env, path, []byte(updated)); err != nil {
		return c, fmt.Errorf("Cannot write %s: %v", path, err)
	}
	recordSeen(env, path, !c.created && seen.Partial)
	c.updated = updated
	return c, nil
}

// applyReplacements returns content with reps applied in order. A file
// with Windows line endings is edited as if it had "\n" ones, which is
// how Read showed it, and keeps its "\r\n" in the result.
func applyReplacements(content, path string, reps []replacement) (string, error) {
	crlf := false
	if n := strings.Count(content, "\r\n"); n > 0 && n == strings.Count(content, "\n") &&
		!slices.ContainsFunc(reps, func(r replacement) bool { return strings.Contains(r.old, "\r") }) {
		content, crlf = strings.ReplaceAll(content, "\r\n", "\n"), true
	}
	for i, r := range reps {
		next, err := replace(content, path, r)
		if err != nil {
			return "", numbered(i, len(reps), err)
		}
		content = next
	}
	if crlf {
		content = strings.ReplaceAll(content, "\n", "\r\n")
	}
	return content, nil
}

// replace makes one replacement in content.
func replace(content, path string, r replacement) (string, error) {
	if r.old == "" {
		if content != "" {
			return "", fmt.Errorf("old_string is empty but %s already has content. Give the text to replace, or use Write to replace the whole file", path)
		}
		return r.new, nil
	}
	n := strings.Count(content, r.old)
	if n == 0 {
		return "", fmt.Errorf("String to replace not found in %s. old_string must match the file exactly, including whitespace and indentation; Read the file again and copy the text.\nString: %s", path, r.old)
	}
	if n > 1 && !r.all {
		return "", fmt.Errorf("Found %d matches of old_string in %s, but replace_all is false. Include more surrounding lines so old_string matches only the place you mean, or set replace_all to true to change all %d.\nString: %s", n, path, n, r.old)
	}
	old := r.old
	// Deleting whole lines: take the line break with them, so no blank
	// line is left behind.
	if r.new == "" && !strings.HasSuffix(old, "\n") && strings.Count(content, old+"\n") == n {
		old += "\n"
	}
	if r.all {
		return strings.ReplaceAll(content, old, r.new), nil
	}
	return strings.Replace(content, old, r.new, 1), nil
}
