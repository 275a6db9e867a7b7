package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Edit replaces an exact string in a file the model has read.
//
// Safety: like Write, Edit is neither read-only nor concurrency-safe, and
// not destructive: it changes only the text the model quotes, in a file it
// has read and that has not changed since, after env.BeforeChange has
// backed it up.
type Edit struct{}

var editSchema = schema(`{
	"type": "object",
	"properties": {
		"file_path": {"type": "string", "description": "Absolute path of the file to change"},
		"old_string": {"type": "string", "description": "The exact text to replace"},
		"new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)"},
		"replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string, not just one"}
	},
	"required": ["file_path", "old_string", "new_string"],
	"additionalProperties": false
}`)

// Spec describes Edit to the model.
func (Edit) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Edit",
		Description: `Replaces exact text in a file.

- You must have read the file with Read in this conversation, and it must not have changed since; otherwise the edit is refused and you should Read it again.
- old_string must match the file exactly, character for character, including indentation and blank lines. When you copy text from Read's output, leave out the line-number prefix (the number and the tab before each line).
- old_string must occur exactly once, so that it is clear what to change: include a few surrounding lines to make it unique. To change every occurrence (renaming a variable, say), set replace_all to true.
- new_string must differ from old_string. Keep the file's style and indentation.
- With an empty old_string and a file_path that does not exist yet, Edit creates the file with new_string as its content.
- Prefer Edit over Write for changes to existing files.`,
		InputSchema: editSchema,
	}
}

// ReadOnly reports false.
func (Edit) ReadOnly(json.RawMessage) bool { return false }

// Destructive reports false: see the type's comment.
func (Edit) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false.
func (Edit) ConcurrencySafe(json.RawMessage) bool { return false }

// editDetail is Edit's toolUseResult.
type editDetail struct {
	FilePath        string `json:"filePath"`
	OldString       string `json:"oldString"`
	NewString       string `json:"newString"`
	OriginalFile    string `json:"originalFile"`
	StructuredPatch []hunk `json:"structuredPatch"`
	UserModified    bool   `json:"userModified"`
	ReplaceAll      bool   `json:"replaceAll"`
}

// Run makes the edit.
func (Edit) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("Edit", input, "file_path", "old_string", "new_string", "replace_all")
	filePath := a.str("file_path", true)
	oldString := a.str("old_string", true)
	newString := a.str("new_string", true)
	replaceAll := a.bool("replace_all")
	if a.err != nil {
		return a.invalid(), nil
	}
	path, err := absFile(env, filePath)
	if err != nil {
		return failf("%v", err), nil
	}
	if oldString == newString {
		return failf("No changes to make: old_string and new_string are exactly the same."), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	detail := editDetail{FilePath: path, OldString: oldString, NewString: newString, ReplaceAll: replaceAll}

	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if oldString != "" {
			return failf("File does not exist: %s (the working directory is %s). To create a file, use Write", path, env.Cwd()), nil
		}
		if err := writeFile(env, path, []byte(newString)); err != nil {
			return failf("Cannot write %s: %v", path, err), nil
		}
		recordSeen(env, path, false)
		detail.StructuredPatch = structuredPatch("", newString)
		r := tool.Text("File created successfully at: " + path + stateNote)
		r.Detail = detail
		return r, nil
	case err != nil:
		return failf("Cannot edit %s: %v", path, err), nil
	case fi.IsDir():
		return failf("%s is a directory; give the path of a file", path), nil
	}
	if err := checkFresh(env, path, fi, true); err != nil {
		return failf("%v", err), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return failf("Cannot read %s: %v", path, err), nil
	}
	original := string(data)
	detail.OriginalFile = original

	// A file with Windows line endings is edited as if it had "\n" ones,
	// which is how Read showed it, and keeps its "\r\n" when written back.
	content, crlf := original, false
	if n := strings.Count(original, "\r\n"); n > 0 && n == strings.Count(original, "\n") && !strings.Contains(oldString, "\r") {
		content, crlf = strings.ReplaceAll(original, "\r\n", "\n"), true
	}

	var updated string
	switch {
	case oldString == "":
		if content != "" {
			return failf("old_string is empty but %s already has content. Give the text to replace, or use Write to replace the whole file", path), nil
		}
		updated = newString
	default:
		n := strings.Count(content, oldString)
		if n == 0 {
			return failf("String to replace not found in %s. old_string must match the file exactly, including whitespace and indentation; Read the file again and copy the text.\nString: %s", path, oldString), nil
		}
		if n > 1 && !replaceAll {
			return failf("Found %d matches of old_string in %s, but replace_all is false. Include more surrounding lines so old_string matches only the place you mean, or set replace_all to true to change all %d.\nString: %s", n, path, n, oldString), nil
		}
		old := oldString
		// Deleting whole lines: take the line break with them, so no blank
		// line is left behind.
		if newString == "" && !strings.HasSuffix(old, "\n") && strings.Count(content, old+"\n") == n {
			old += "\n"
		}
		if replaceAll {
			updated = strings.ReplaceAll(content, old, newString)
		} else {
			updated = strings.Replace(content, old, newString, 1)
		}
	}
	if crlf {
		updated = strings.ReplaceAll(updated, "\n", "\r\n")
	}
	detail.StructuredPatch = structuredPatch(original, updated)
	if err := writeFile(env, path, []byte(updated)); err != nil {
		return failf("Cannot write %s: %v", path, err), nil
	}
	seen, _ := env.Files.Seen(path)
	recordSeen(env, path, seen.Partial)
	r := tool.Text("The file " + path + " has been updated successfully." + stateNote)
	r.Detail = detail
	return r, nil
}
