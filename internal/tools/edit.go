package tools

import (
	"context"
	"encoding/json"

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
	reps := []replacement{{old: oldString, new: newString, all: replaceAll}}
	if err := checkReplacements(reps); err != nil {
		return failf("%v", err), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	c, err := changeFile(env, path, reps)
	if err != nil {
		return failf("%v", err), nil
	}
	detail := editDetail{
		FilePath: path, OldString: oldString, NewString: newString, ReplaceAll: replaceAll,
		OriginalFile: c.original, StructuredPatch: structuredPatch(c.original, c.updated),
	}
	if c.created {
		r := tool.Text("File created successfully at: " + path + stateNote)
		r.Detail = detail
		return r, nil
	}
	r := tool.Text("The file " + path + " has been updated successfully." + stateNote)
	r.Detail = detail
	return r, nil
}

// TouchedPaths implements tool.PathToucher: the file it writes.
func (Edit) TouchedPaths(input json.RawMessage) []tool.PathUse { return fileUse(input, true) }

// Summary implements tool.Summarizer: the file.
func (Edit) Summary(input json.RawMessage, rel func(string) string) string {
	if p := stringArgs(input, "file_path")[0]; p != "" {
		return rel(p)
	}
	return ""
}

// Reobtainable implements tool.Reobtainable: the file can be read again.
func (Edit) Reobtainable() bool { return true }
