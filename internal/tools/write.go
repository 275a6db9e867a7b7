package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Write creates a file or replaces one the model has read in full.
//
// Safety: Write is not read-only and not concurrency-safe. It is not
// destructive either, even when it overwrites: it may only replace a file
// the model has read and that has not changed since, and env.BeforeChange
// backs the old content up first (file history, SPEC F1), so the change can
// be rewound.
type Write struct{}

var writeSchema = schema(`{
	"type": "object",
	"properties": {
		"file_path": {"type": "string", "description": "Absolute path of the file to write"},
		"content": {"type": "string", "description": "The complete new content of the file"}
	},
	"required": ["file_path", "content"],
	"additionalProperties": false
}`)

// Spec describes Write to the model.
func (Write) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Write",
		Description: `Writes a file, replacing it completely if it exists.

- file_path must be absolute. Missing parent folders are created.
- To change part of an existing file, use Edit: it sends only the change and cannot lose the rest of the file. Use Write for new files and for complete rewrites.
- Before overwriting an existing file you must have read all of it with Read in this conversation, and it must not have changed since; otherwise the write is refused and you should Read it again.
- Do not create files nobody asked for, such as documentation or READMEs, unless the task needs them.`,
		InputSchema: writeSchema,
	}
}

// ReadOnly reports false.
func (Write) ReadOnly(json.RawMessage) bool { return false }

// Destructive reports false: see the type's comment.
func (Write) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false.
func (Write) ConcurrencySafe(json.RawMessage) bool { return false }

// writeDetail is Write's toolUseResult.
type writeDetail struct {
	Type            string  `json:"type"` // "create" or "update"
	FilePath        string  `json:"filePath"`
	Content         string  `json:"content"`
	StructuredPatch []hunk  `json:"structuredPatch"`
	OriginalFile    *string `json:"originalFile"`
	UserModified    bool    `json:"userModified"`
}

// Run writes the file.
func (Write) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("Write", input, "file_path", "content")
	filePath := a.str("file_path", true)
	content := a.str("content", true)
	if a.err != nil {
		return a.invalid(), nil
	}
	path, err := absFile(env, filePath)
	if err != nil {
		return failf("%v", err), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	detail := writeDetail{Type: "create", FilePath: path, Content: content, StructuredPatch: []hunk{}}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return failf("Cannot write %s: %v", path, err), nil
	case fi.IsDir():
		return failf("%s is a directory; give the path of a file", path), nil
	default:
		if err := checkFresh(env, path, fi, false); err != nil {
			return failf("%v", err), nil
		}
		old, err := os.ReadFile(path)
		if err != nil {
			return failf("Cannot read %s: %v", path, err), nil
		}
		orig := string(old)
		detail.Type, detail.OriginalFile = "update", &orig
		detail.StructuredPatch = structuredPatch(orig, content)
	}
	if err := writeFile(env, path, []byte(content)); err != nil {
		return failf("Cannot write %s: %v", path, err), nil
	}
	recordSeen(env, path, false)
	text := "The file " + path + " has been updated successfully." + stateNote
	if detail.Type == "create" {
		text = "File created successfully at: " + path + stateNote
	}
	r := tool.Text(text)
	r.Detail = detail
	return r, nil
}

// TouchedPaths implements tool.PathToucher: the file it writes.
func (Write) TouchedPaths(input json.RawMessage) []tool.PathUse { return fileUse(input, true) }

// Summary implements tool.Summarizer: the file.
func (Write) Summary(input json.RawMessage, rel func(string) string) string {
	if p := stringArgs(input, "file_path")[0]; p != "" {
		return rel(p)
	}
	return ""
}

// Reobtainable implements tool.Reobtainable: the file can be read again.
func (Write) Reobtainable() bool { return true }
