package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Change is what a call of Edit, MultiEdit or Write would do to its file:
// the file's content now ("" when it does not exist) and after the call.
type Change struct {
	Path          string
	Before, After string
	// Create is set when the file does not exist yet.
	Create bool
}

// PreviewChange works out, without writing anything, what the call of
// the tool named name with input would change: the permission question
// shows it as the diff the call will make, with the file's real line
// numbers and context. ok is false for other tools, for input they would
// refuse, and when the file cannot be read (the question then shows the
// call's own strings).
func PreviewChange(name string, input json.RawMessage) (c Change, ok bool) {
	var in struct {
		FilePath  string          `json:"file_path"`
		OldString string          `json:"old_string"`
		NewString string          `json:"new_string"`
		All       bool            `json:"replace_all"`
		Content   *string         `json:"content"`
		Edits     []multiEditItem `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil || !filepath.IsAbs(in.FilePath) {
		return c, false
	}
	c.Path = filepath.Clean(in.FilePath)
	data, err := os.ReadFile(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Create = true
	case err != nil:
		return c, false
	}
	c.Before = string(data)
	var reps []replacement
	switch name {
	case "Write":
		if in.Content == nil {
			return c, false
		}
		c.After = *in.Content
		return c, true
	case "Edit":
		reps = []replacement{{old: in.OldString, new: in.NewString, all: in.All}}
	case "MultiEdit":
		for _, e := range in.Edits {
			reps = append(reps, replacement{old: e.OldString, new: e.NewString, all: e.ReplaceAll})
		}
	default:
		return c, false
	}
	if len(reps) == 0 || checkReplacements(reps) != nil || (c.Create && reps[0].old != "") {
		return c, false
	}
	if c.After, err = applyReplacements(c.Before, c.Path, reps); err != nil {
		return c, false
	}
	return c, true
}
