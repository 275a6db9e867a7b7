package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/tool"
)

// args decodes one tool call's input field by field, so that every
// complaint names the parameter and says what was expected. Models
// sometimes send numbers and booleans as strings ("10", "true"); those are
// accepted. The first problem is kept in err; later lookups are no-ops.
type args struct {
	tool   string
	fields map[string]json.RawMessage
	err    error
}

// parseArgs decodes input as a JSON object whose keys must all be in known.
func parseArgs(toolName string, input json.RawMessage, known ...string) *args {
	a := &args{tool: toolName}
	if err := json.Unmarshal(input, &a.fields); err != nil || a.fields == nil {
		a.err = fmt.Errorf("the input must be a JSON object with the parameters %s", strings.Join(known, ", "))
		return a
	}
	var unknown []string
	for k := range a.fields {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		takes := strings.Join(known, ", ")
		if len(known) == 0 {
			takes = "no parameters"
		}
		a.err = fmt.Errorf("unknown parameter %q; %s takes %s", unknown[0], toolName, takes)
	}
	return a
}

func (a *args) raw(name string) (json.RawMessage, bool) {
	if a.err != nil {
		return nil, false
	}
	v, ok := a.fields[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func (a *args) fail(name, want string, got json.RawMessage) {
	a.err = fmt.Errorf("parameter %q must be %s, got %s", name, want, abbreviate(string(got), 40))
}

// str returns a string parameter; a missing required one is an error.
func (a *args) str(name string, required bool) string {
	v, ok := a.raw(name)
	if !ok {
		if required && a.err == nil {
			a.err = fmt.Errorf("the required parameter %q is missing", name)
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		a.fail(name, "a string", v)
	}
	return s
}

// int returns an integer parameter and whether it was given.
func (a *args) int(name string) (int, bool) {
	v, ok := a.raw(name)
	if !ok {
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		var s string
		if json.Unmarshal(v, &s) != nil {
			a.fail(name, "an integer", v)
			return 0, false
		}
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			a.fail(name, "an integer", v)
			return 0, false
		}
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		a.fail(name, "an integer", v)
		return 0, false
	}
	return int(f), true
}

// bool returns a boolean parameter (false when absent).
func (a *args) bool(name string) bool {
	v, ok := a.raw(name)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true
		case "false":
			return false
		}
	}
	a.fail(name, "true or false", v)
	return false
}

// list returns an array parameter's elements, undecoded; a missing
// required one is an error. An array sent as a JSON string holding it is
// accepted too.
func (a *args) list(name string, required bool) []json.RawMessage {
	v, ok := a.raw(name)
	if !ok {
		if required && a.err == nil {
			a.err = fmt.Errorf("the required parameter %q is missing", name)
		}
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		v = json.RawMessage(s)
	}
	var out []json.RawMessage
	if err := json.Unmarshal(v, &out); err != nil || out == nil {
		a.fail(name, "an array", v)
		return nil
	}
	return out
}

// invalid returns the result telling the model its input was wrong.
func (a *args) invalid() tool.Result {
	return failf("InputValidationError: %s: %v", a.tool, a.err)
}

// failf returns an error result for a call that was refused before it
// changed anything, wrapped in the tags Claude Code uses for such errors.
func failf(format string, v ...any) tool.Result {
	return tool.Errorf("<tool_use_error>%s</tool_use_error>", fmt.Sprintf(format, v...))
}

// abbreviate shortens s to at most n runes for an error message.
func abbreviate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// schema is a tool's hand-written JSON schema; it must be valid JSON.
func schema(s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		panic("tools: invalid JSON schema: " + s)
	}
	return json.RawMessage(s)
}

// stringArgs returns the string fields named keys of a JSON object
// input, "" for a missing one; all "" when input is not an object.
func stringArgs(input json.RawMessage, keys ...string) []string {
	var in map[string]json.RawMessage
	_ = json.Unmarshal(input, &in)
	out := make([]string, len(keys))
	for i, k := range keys {
		_ = json.Unmarshal(in[k], &out[i])
	}
	return out
}

// fileUse is the one path a file tool's input names in file_path.
func fileUse(input json.RawMessage, write bool) []tool.PathUse {
	if p := stringArgs(input, "file_path")[0]; p != "" {
		return []tool.PathUse{{Path: p, Write: write}}
	}
	return nil
}

// searchSummary is how a search call reads: the pattern, and where.
func searchSummary(input json.RawMessage, rel func(string) string) string {
	a := stringArgs(input, "pattern", "path")
	if a[1] != "" {
		return fmt.Sprintf("%q in %s", a[0], rel(a[1]))
	}
	return fmt.Sprintf("%q", a[0])
}

// searchUse is what a search call reads: its path, or the working
// directory.
func searchUse(input json.RawMessage) []tool.PathUse {
	p := stringArgs(input, "path")[0]
	if p == "" {
		p = "."
	}
	return []tool.PathUse{{Path: p, Folder: true}}
}
