package permission

import (
	"context"
	"encoding/json"

	"github.com/cairn-dev/cairn/internal/shellsafe"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// named stands for the tool a test names: its safety answers are the
// test's, and the files a call touches are what the core tool of that
// name says (none for other names).
type named struct {
	name   string
	ro, de bool
}

func (n named) Spec() model.ToolSpec                           { return model.ToolSpec{Name: n.name} }
func (n named) ReadOnly(json.RawMessage) bool                  { return n.ro }
func (n named) Destructive(json.RawMessage) bool               { return n.de }
func (named) ConcurrencySafe(json.RawMessage) bool             { return false }
func (n named) TouchedPaths(in json.RawMessage) []tool.PathUse { return pathsOf(n.name, in) }
func (named) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("ran"), nil
}

// core is the core tool named name.
func core(name string) (tool.Tool, bool) {
	for _, t := range tools.Core() {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}

// pathsOf is what the core tool named name says a call with in touches.
func pathsOf(name string, in json.RawMessage) []tool.PathUse {
	if t, ok := core(name); ok {
		return tool.TouchedPaths(t, in)
	}
	return nil
}

// traits are a core tool's own safety answers for in; Bash's come from
// the command line read with cwd as its working directory.
func traits(name string, in json.RawMessage, cwd string) (readOnly, destructive bool) {
	if name == "Bash" {
		var args struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(in, &args) != nil {
			return false, false
		}
		c := shellsafe.Parse(args.Command).Classify(shellsafe.Options{Dir: cwd})
		return c.ReadOnly, c.Destructive
	}
	if t, ok := core(name); ok {
		return t.ReadOnly(in), t.Destructive(in)
	}
	return false, false
}
