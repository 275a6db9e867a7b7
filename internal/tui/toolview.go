package tui

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/tool"
)

// tool renders a tool call: a line naming it, then its result collapsed
// to a line or two (all of it when expanded), or the diff of an edit.
func (r *renderer) tool(it *item, width int) []string {
	if todos, ok := todosOf(it.call); ok && it.result != nil && !it.result.failed() {
		return r.todoCall(todos, width)
	}
	head := it.call.Name
	if arg := r.callArg(it.call.Name, it.call.Input); arg != "" {
		head += "(" + arg + ")"
	}
	bullet := r.st.tool.Render("● ")
	switch {
	case it.result == nil:
		bullet = r.st.dim.Render("○ ")
	case it.result.failed():
		bullet = r.st.toolErr.Render("● ")
	}
	out := []string{bullet + r.st.bold.Render(truncate(head, width-2))}
	if it.result == nil {
		if it.progress != "" {
			return append(out, r.st.dim.Render(truncate("  ⎿  "+it.progress, width)))
		}
		return append(out, r.st.dim.Render("  ⎿  Running…"))
	}
	res := it.result
	if t, known := r.lookup(it.call.Name); !res.failed() && known && tool.Writes(t, it.call.Input) {
		p, ok := patchOf(res.detail)
		if !ok {
			p, ok = patchFromInput(it.call.Input)
		}
		if ok {
			add, del := p.counts()
			out = append(out, r.st.dim.Render(truncate(fmt.Sprintf("  ⎿  Updated %s with %d %s and %d %s", r.rel(p.FilePath), add, plural(add, "addition"), del, plural(del, "removal")), width)))
			limit := 20
			if r.expanded {
				limit = 0
			}
			for _, l := range r.diff(p, width-5, limit) {
				out = append(out, "     "+l)
			}
			return out
		}
	}
	text := strings.TrimRight(res.Text(), "\n")
	style := r.st.toolOK
	if res.failed() {
		style = r.st.toolErr
	}
	if text == "" {
		return append(out, style.Render("  ⎿  (no output)"))
	}
	lines := strings.Split(text, "\n")
	shown := lines
	if !r.expanded && len(lines) > collapsedLines {
		shown = lines[:collapsedLines]
	}
	for i, l := range shown {
		p := "     "
		if i == 0 {
			p = "  ⎿  "
		}
		out = append(out, style.Render(p+truncate(strings.ReplaceAll(l, "\t", "    "), width-5)))
	}
	if len(shown) < len(lines) {
		out = append(out, r.st.dim.Render(fmt.Sprintf("     … +%d lines (ctrl+o to expand)", len(lines)-len(shown))))
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// callArg is what a call is about, in a few words: what its tool says
// (tool.Summarizer: the command, the file, the pattern), else the first
// text field of its input.
func (r *renderer) callArg(name string, input json.RawMessage) string {
	if t, ok := r.lookup(name); ok {
		if s := tool.Summary(t, input, r.rel); s != "" {
			return oneLine(s, 200)
		}
	}
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if s, ok := in[k].(string); ok && s != "" {
			return oneLine(s, 80)
		}
	}
	return ""
}

// rel shows a path from the working directory when it is inside it.
func (r *renderer) rel(path string) string {
	if r.cwd == "" || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(r.cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
