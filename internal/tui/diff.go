package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// patch is an edit's diff in Claude Code's structuredPatch shape: hunks
// with 1-based line numbers and lines prefixed " ", "-" or "+".
type patch struct {
	FilePath string `json:"filePath"`
	Type     string `json:"type"` // Write: "create" or "update"
	Content  string `json:"content"`
	Hunks    []hunk `json:"structuredPatch"`
}

type hunk struct {
	OldStart int      `json:"oldStart"`
	NewStart int      `json:"newStart"`
	Lines    []string `json:"lines"`
}

// patchOf reads the diff an Edit or Write recorded in its toolUseResult.
func patchOf(detail json.RawMessage) (patch, bool) {
	var p patch
	if len(detail) == 0 || json.Unmarshal(detail, &p) != nil {
		return p, false
	}
	if len(p.Hunks) == 0 && p.Type == "create" && p.Content != "" {
		p = diffOf(p.FilePath, "", p.Content)
	}
	return p, len(p.Hunks) > 0
}

// patchFromInput makes the diff of a call that writes a file from its
// input — old_string replaced by new_string, or the content written — for
// calls whose result carries no record (a resumed session).
func patchFromInput(input json.RawMessage) (patch, bool) {
	var in struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Content   string `json:"content"`
	}
	if json.Unmarshal(input, &in) != nil {
		return patch{}, false
	}
	var p patch
	switch {
	case in.OldString != "" || in.NewString != "":
		p = diffOf(in.FilePath, in.OldString, in.NewString)
	case in.Content != "":
		p = diffOf(in.FilePath, "", in.Content)
	}
	return p, len(p.Hunks) > 0
}

// diffOf is the line diff of before and after, with three lines of
// context.
func diffOf(path, before, after string) patch {
	p := patch{FilePath: path}
	edits := udiff.Lines(ensureNewline(before), ensureNewline(after))
	u, err := udiff.ToUnifiedDiff("", "", ensureNewline(before), edits, 3)
	if err != nil {
		return p
	}
	for _, h := range u.Hunks {
		var lines []string
		for _, l := range h.Lines {
			prefix := " "
			switch l.Kind {
			case udiff.Delete:
				prefix = "-"
			case udiff.Insert:
				prefix = "+"
			}
			lines = append(lines, prefix+strings.TrimSuffix(l.Content, "\n"))
		}
		p.Hunks = append(p.Hunks, hunk{h.FromLine, h.ToLine, lines})
	}
	return p
}

func ensureNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// counts are the lines a patch adds and removes.
func (p patch) counts() (added, removed int) {
	for _, h := range p.Hunks {
		for _, l := range h.Lines {
			switch {
			case strings.HasPrefix(l, "+"):
				added++
			case strings.HasPrefix(l, "-"):
				removed++
			}
		}
	}
	return added, removed
}

// render draws the patch as coloured lines with the line numbers of the
// new file (of the old one for removed lines), at most limit lines when
// limit > 0.
func (r *renderer) diff(p patch, width, limit int) []string {
	var out []string
	total := 0
	for _, h := range p.Hunks {
		total += len(h.Lines)
	}
	for hi, h := range p.Hunks {
		if hi > 0 {
			out = append(out, r.st.dim.Render("     ⋮"))
		}
		oldN, newN := h.OldStart, h.NewStart
		for _, l := range h.Lines {
			if limit > 0 && len(out) >= limit {
				out = append(out, r.st.dim.Render(fmt.Sprintf("     … +%d lines (ctrl+o to expand)", total-limit)))
				return out
			}
			mark, text := " ", l
			if l != "" {
				mark, text = l[:1], l[1:]
			}
			text = strings.ReplaceAll(text, "\t", "    ")
			var num int
			style := r.st.dim
			switch mark {
			case "-":
				num, style = oldN, r.st.removed
				oldN++
			case "+":
				num, style = newN, r.st.added
				newN++
			case "\\":
				continue
			default:
				num = newN
				oldN++
				newN++
			}
			line := fmt.Sprintf("%5d %s %s", num, mark, text)
			out = append(out, style.Render(truncate(line, width)))
		}
	}
	return out
}
