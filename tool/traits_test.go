package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// plain is a tool with no optional interfaces.
type plain struct{ name string }

func (p plain) Spec() model.ToolSpec               { return model.ToolSpec{Name: p.name} }
func (plain) ReadOnly(json.RawMessage) bool        { return false }
func (plain) Destructive(json.RawMessage) bool     { return false }
func (plain) ConcurrencySafe(json.RawMessage) bool { return false }
func (plain) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("ok"), nil
}

// saver writes the file its input names.
type saver struct{ plain }

func (saver) TouchedPaths(in json.RawMessage) []tool.PathUse {
	var a struct{ Path string }
	if json.Unmarshal(in, &a) != nil || a.Path == "" {
		return nil
	}
	return []tool.PathUse{{Path: a.Path, Write: true}}
}
func (saver) Reobtainable() bool { return true }
func (saver) Summary(in json.RawMessage, rel func(string) string) string {
	return rel(tool.TouchedPaths(saver{}, in)[0].Path)
}

// watched wraps a tool, as a tracker or a gate does.
type watched struct{ tool.Tool }

func (w watched) Unwrap() tool.Tool { return w.Tool }

// hidden wraps a tool without saying so.
type hidden struct{ tool.Tool }

func TestOptionalInterfaces(t *testing.T) {
	in := json.RawMessage(`{"Path":"/p/a.txt"}`)
	short := func(p string) string { return "…" + p[len(p)-5:] }
	for _, tt := range []struct {
		name     string
		tl       tool.Tool
		paths    []tool.PathUse
		reobtain bool
		summary  string
	}{
		{"plain", plain{"P"}, nil, false, ""},
		{"saver", saver{plain{"S"}}, []tool.PathUse{{Path: "/p/a.txt", Write: true}}, true, "…a.txt"},
		{"wrapped twice", watched{watched{saver{plain{"S"}}}}, []tool.PathUse{{Path: "/p/a.txt", Write: true}}, true, "…a.txt"},
		{"wrapper that does not unwrap", hidden{saver{plain{"S"}}}, nil, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.paths, tool.TouchedPaths(tt.tl, in)); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if got := tool.Writes(tt.tl, in); got != (tt.paths != nil) {
				t.Errorf("Writes = %v", got)
			}
			if got := tool.IsReobtainable(tt.tl); got != tt.reobtain {
				t.Errorf("IsReobtainable = %v", got)
			}
			if got := tool.Summary(tt.tl, in, short); got != tt.summary {
				t.Errorf("Summary = %q, want %q", got, tt.summary)
			}
		})
	}
}

// sessionOwned works on its session's state: a subagent gets none.
type sessionOwned struct{ plain }

func (sessionOwned) ForSubagent() tool.Tool { return nil }

// copied keeps state a subagent gets a copy of.
type copied struct{ plain }

func (c copied) ForSubagent() tool.Tool { return plain{c.name + "-copy"} }

func TestForSubagent(t *testing.T) {
	name := func(tl tool.Tool) string {
		if tl == nil {
			return "<none>"
		}
		return tl.Spec().Name
	}
	for _, tt := range []struct {
		name string
		tl   tool.Tool
		want string
	}{
		{"plain", plain{"P"}, "P"},
		{"session's own", sessionOwned{plain{"S"}}, "<none>"},
		{"session's own, wrapped", watched{sessionOwned{plain{"S"}}}, "<none>"},
		{"copy", copied{plain{"C"}}, "C-copy"},
		{"copy, wrapped", watched{copied{plain{"C"}}}, "C-copy"},
		{"wrapper that does not unwrap", hidden{sessionOwned{plain{"S"}}}, "S"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := name(tool.ForSubagent(tt.tl)); got != tt.want {
				t.Errorf("ForSubagent gives %s, want %s", got, tt.want)
			}
		})
	}
}
