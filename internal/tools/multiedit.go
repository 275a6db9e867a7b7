package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// MultiEdit makes several exact-text replacements in one file the model
// has read: in order, each on the text the previous ones left, and all or
// none — the file is written once, after every edit has applied in
// memory. It follows Edit's rules and refusals (SPEC F5).
//
// Safety: as Edit, MultiEdit is neither read-only, destructive nor
// concurrency-safe: it changes only the text the model quotes, in a file
// it has read and that has not changed since, after env.BeforeChange has
// backed it up once.
type MultiEdit struct{}

var multiEditSchema = schema(`{
	"type": "object",
	"properties": {
		"file_path": {"type": "string", "description": "Absolute path of the file to change"},
		"edits": {
			"type": "array",
			"minItems": 1,
			"description": "The replacements to make, applied in this order, each to the text the previous ones left",
			"items": {
				"type": "object",
				"properties": {
					"old_string": {"type": "string", "description": "The exact text to replace"},
					"new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)"},
					"replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string, not just one"}
				},
				"required": ["old_string", "new_string"],
				"additionalProperties": false
			}
		}
	},
	"required": ["file_path", "edits"],
	"additionalProperties": false
}`)

// Spec describes MultiEdit to the model.
func (MultiEdit) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "MultiEdit",
		Description: `Makes several exact-text replacements in one file in a single call. Prefer it to a series of Edit calls on the same file.

- Each edit has Edit's parameters (old_string, new_string, optional replace_all) and Edit's rules: you must have read the file with Read in this conversation and it must not have changed since; old_string must match exactly (leave out Read's line-number prefixes) and occur once unless replace_all is true; new_string must differ from old_string.
- Edits apply in the order given, each to the text the previous ones left. An edit's old_string may not be text that an earlier edit of the same call inserts.
- All or nothing: if any edit cannot apply, the file is left untouched and the error names the edit. Fix it and send the whole call again.
- To create a file, give a file_path that does not exist and an empty old_string in the first edit.`,
		InputSchema: multiEditSchema,
	}
}

// ReadOnly reports false.
func (MultiEdit) ReadOnly(json.RawMessage) bool { return false }

// Destructive reports false: see the type's comment.
func (MultiEdit) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false.
func (MultiEdit) ConcurrencySafe(json.RawMessage) bool { return false }

// multiEditDetail is MultiEdit's toolUseResult: the edits as the model
// sent them, and one patch for the whole change.
type multiEditDetail struct {
	FilePath             string          `json:"filePath"`
	Edits                []multiEditItem `json:"edits"`
	OriginalFileContents string          `json:"originalFileContents"`
	StructuredPatch      []hunk          `json:"structuredPatch"`
	UserModified         bool            `json:"userModified"`
}

type multiEditItem struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// Run makes the edits.
func (MultiEdit) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("MultiEdit", input, "file_path", "edits")
	filePath := a.str("file_path", true)
	items := a.list("edits", true)
	var reps []replacement
	for i, raw := range items {
		e := parseArgs("each edit", raw, "old_string", "new_string", "replace_all")
		r := replacement{old: e.str("old_string", true), new: e.str("new_string", true), all: e.bool("replace_all")}
		if e.err != nil {
			a.err = fmt.Errorf("edits[%d]: %w", i, e.err)
			break
		}
		reps = append(reps, r)
	}
	if a.err == nil && len(reps) == 0 {
		a.err = fmt.Errorf("parameter %q must hold at least one edit", "edits")
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	path, err := absFile(env, filePath)
	if err != nil {
		return failf("%v", err), nil
	}
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
	detail := multiEditDetail{
		FilePath: path, OriginalFileContents: c.original, StructuredPatch: structuredPatch(c.original, c.updated),
	}
	var b strings.Builder
	noun := "edits"
	if len(reps) == 1 {
		noun = "edit"
	}
	fmt.Fprintf(&b, "Applied %d %s to %s:", len(reps), noun, path)
	for i, r := range reps {
		detail.Edits = append(detail.Edits, multiEditItem{OldString: r.old, NewString: r.new, ReplaceAll: r.all})
		fmt.Fprintf(&b, "\n%d. Replaced %s with %s", i+1, quoteShort(r.old), quoteShort(r.new))
	}
	res := tool.Text(b.String())
	res.Detail = detail
	return res, nil
}

// quoteShort quotes s for a one-line summary, cut after 50 characters.
func quoteShort(s string) string {
	const n = 50
	r := []rune(s)
	if len(r) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(string(r[:n])) + "…"
}

// TouchedPaths implements tool.PathToucher: the file it writes.
func (MultiEdit) TouchedPaths(input json.RawMessage) []tool.PathUse { return fileUse(input, true) }

// Summary implements tool.Summarizer: the file.
func (MultiEdit) Summary(input json.RawMessage, rel func(string) string) string {
	if p := stringArgs(input, "file_path")[0]; p != "" {
		return rel(p)
	}
	return ""
}
