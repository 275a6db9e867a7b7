package tui

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	glamourstyles "charm.land/glamour/v2/styles"
	"charm.land/lipgloss/v2"
)

// markdown renders Markdown to terminal lines at one width, keeping a
// glamour renderer per width (making one is the expensive part).
type markdown struct {
	theme     string
	renderers map[int]*glamour.TermRenderer
}

func newMarkdown(theme string) *markdown {
	return &markdown{theme: theme, renderers: map[int]*glamour.TermRenderer{}}
}

func (md *markdown) renderer(width int) *glamour.TermRenderer {
	if r, ok := md.renderers[width]; ok {
		return r
	}
	cfg := glamourstyles.DarkStyleConfig
	switch md.theme {
	case ThemeLight:
		cfg = glamourstyles.LightStyleConfig
	case ThemePlain:
		uncolour(reflect.ValueOf(&cfg).Elem())
	}
	zero := uint(0)
	cfg.Document.Margin = &zero
	cfg.Document.BlockPrefix, cfg.Document.BlockSuffix = "", ""
	// A single newline inside a paragraph stays a line break, as in
	// Claude Code (CommonMark would join the lines); lists, code and
	// tables keep their lines either way.
	r, err := glamour.NewTermRenderer(glamour.WithStyles(cfg), glamour.WithWordWrap(width), glamour.WithPreservedNewLines())
	if err != nil {
		return nil
	}
	md.renderers[width] = r
	return r
}

// uncolour clears every colour of a glamour style (the fields named
// Color and BackgroundColor, at any depth), keeping its emphasis and
// layout: the style for NO_COLOR.
func uncolour(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			uncolour(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if name := v.Type().Field(i).Name; (name == "Color" || name == "BackgroundColor") && f.Kind() == reflect.Pointer && f.CanSet() {
				f.Set(reflect.Zero(f.Type()))
				continue
			}
			if f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct && f.CanSet() {
				c := reflect.New(f.Elem().Type()) // styles share pointers: copy before changing
				c.Elem().Set(f.Elem())
				f.Set(c)
			}
			uncolour(f)
		}
	}
}

// render renders one Markdown block (or several) to lines no wider than
// width, without the blank lines glamour puts around a document. A table
// is as wide as its content (glamour stretches every table to the full
// width), up to width, past which its cells wrap; so is a table inside a
// list item, indented as the item's text is.
func (md *markdown) render(text string, width int) []string {
	width = max(width, 10)
	var lines []string
	for _, seg := range splitTables(text) {
		var l []string
		if seg.table {
			l = md.table(seg.text, width)
		} else if body, tables := nestedTables(seg.text); len(tables) > 0 {
			l = md.spliceTables(md.renderAt(body, width), tables, width)
		} else {
			l = md.renderAt(seg.text, width)
		}
		if len(l) > 0 {
			lines = appendBlock(lines, l)
		}
	}
	return lines
}

// table renders a table as wide as its content, at most width.
func (md *markdown) table(text string, width int) []string {
	// Rendered without a wrap width, a table takes its natural size.
	l := md.renderAt(text, 0)
	if maxWidth(l) > width {
		l = md.renderAt(text, width)
	}
	return l
}

// nestedMark is the placeholder line standing for the n-th table of a
// list (nestedTables) while the list is rendered.
func nestedMark(n int) string { return fmt.Sprintf("⁂%d⁂", n) } // short: never broken by the wrap

// listItem matches the first line of a list item.
var listItem = regexp.MustCompile(`^\s*([-*+]|\d{1,9}[.)])(\s|$)`)

// nestedTables finds the tables inside list items of text (indented
// under an item, outside code fences): body is text with each table
// replaced by a placeholder line (nestedMark) at the table's indentation,
// tables their text without that indentation.
func nestedTables(text string) (body string, tables []string) {
	lines := strings.SplitAfter(text, "\n")
	var out []string
	inList, fence := false, ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		indented := line != strings.TrimLeft(line, " \t")
		switch {
		case trackFence(&fence, trimmed):
		case listItem.MatchString(line):
			inList = true
		case trimmed != "" && !indented: // a paragraph after the list ends it
			inList = false
		case inList && i+1 < len(lines) && trimmed != "" && indented: // indented under an item
			n := delimiterCells(lines[i+1])
			if n == 0 || n != len(tableCells(line)) {
				break
			}
			end := i + 2
			for end < len(lines) && strings.TrimSpace(lines[end]) != "" && strings.Contains(lines[end], "|") {
				end++
			}
			var table strings.Builder
			for _, l := range lines[i:end] {
				table.WriteString(strings.TrimLeft(l, " \t"))
			}
			indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			out = append(out, indent+nestedMark(len(tables))+"\n")
			tables = append(tables, table.String())
			i = end - 1
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, ""), tables
}

// spliceTables puts the tables in place of their placeholders in a
// rendered list, each as wide as its content. A placeholder on a line of
// its own gives the table its indentation; one glamour ran onto the end
// of an item's line (a table after a blank line in the item) ends that
// line, and the table takes the line's indentation.
func (md *markdown) spliceTables(lines, tables []string, width int) []string {
	var out []string
	for _, l := range lines {
		plain := stripANSI(l)
		n, at := -1, -1
		for k := range tables {
			if at = strings.Index(plain, nestedMark(k)); at >= 0 {
				n = k
				break
			}
		}
		if n < 0 {
			out = append(out, l)
			continue
		}
		before := plain[:at]
		indent := lipgloss.Width(before)
		if strings.TrimSpace(before) != "" {
			head := strings.TrimRight(before, " ")
			if raw := strings.Index(l, nestedMark(n)); raw >= 0 {
				head = l[:raw] + "\x1b[m" // the item's own styling, ended
			}
			out = append(out, head)
			indent = len(before) - len(strings.TrimLeft(before, " "))
		}
		for _, t := range md.table(tables[n], max(width-indent, 10)) {
			out = append(out, strings.Repeat(" ", indent)+t)
		}
	}
	return out
}

// renderAt renders Markdown with glamour wrapping at width (0: no
// wrapping) and trims the blank lines around it and the padding.
func (md *markdown) renderAt(text string, width int) []string {
	r := md.renderer(width)
	out := text
	if r != nil {
		if s, err := r.Render(text); err == nil {
			out = s
		}
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(stripANSI(lines[0])) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(stripANSI(lines[len(lines)-1])) == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		// glamour pads lines to the wrap width; the padding only costs.
		lines[i] = strings.TrimRight(l, " ")
		if width > 0 && lipgloss.Width(lines[i]) > width {
			lines[i] = truncate(lines[i], width)
		}
	}
	return lines
}

func maxWidth(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, lipgloss.Width(l))
	}
	return w
}

// segment is a run of Markdown lines: a table, or anything else.
type segment struct {
	text  string
	table bool
}

// splitTables cuts Markdown into tables and the text between them. A
// table starts at a row of cells followed by a delimiter row with as many
// cells (|---|:--:|), outside code fences and not indented (a table in a
// list item stays in its list), and ends at a blank line, as in GFM.
func splitTables(text string) []segment {
	lines := strings.SplitAfter(text, "\n")
	var segs []segment
	start, fence := 0, ""
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			continue
		}
		if i+1 >= len(lines) || strings.HasPrefix(lines[i], "  ") || strings.HasPrefix(lines[i], "\t") {
			continue
		}
		n := delimiterCells(lines[i+1])
		if n == 0 || n != len(tableCells(lines[i])) {
			continue
		}
		end := i + 2
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		if before := strings.Join(lines[start:i], ""); strings.TrimSpace(before) != "" {
			segs = append(segs, segment{text: before})
		}
		segs = append(segs, segment{text: strings.Join(lines[i:end], ""), table: true})
		start, i = end, end-1
	}
	if rest := strings.Join(lines[start:], ""); strings.TrimSpace(rest) != "" || len(segs) == 0 {
		segs = append(segs, segment{text: rest})
	}
	return segs
}

// tableCells splits a table row at its unescaped pipes, without the
// optional pipes at either end.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, "\\|") {
		line = line[:len(line)-1]
	}
	var cells []string
	from := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			cells = append(cells, line[from:i])
			from = i + 1
		}
	}
	return append(cells, line[from:])
}

// delimiterCells is the number of cells of a table's delimiter row
// (---, :--, --:, :-: between pipes), 0 if line is not one. A row
// without a pipe is a heading's underline or a rule, not a delimiter.
func delimiterCells(line string) int {
	if !strings.Contains(line, "|") {
		return 0
	}
	cells := tableCells(line)
	for _, c := range cells {
		c = strings.TrimSpace(c)
		c = strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return 0
		}
	}
	return len(cells)
}

// splitBlocks splits Markdown at the blank lines between blocks (never
// inside a code fence): complete holds the blocks that can no longer
// change as more text streams in, tail the last, growing one.
func splitBlocks(text string) (complete []string, tail string) {
	start, fence := 0, ""
	i := 0
	for i < len(text) {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			break
		}
		line := text[i : i+end]
		next := i + end + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case trackFence(&fence, trimmed):
		case trimmed == "" && next < len(text) && !continuesList(text[next:]):
			if block := strings.TrimSpace(text[start:i]); block != "" {
				complete = append(complete, text[start:i])
			}
			start = next
		}
		i = next
	}
	return complete, text[start:]
}

// trackFence follows code fences line by line: given a line (trimmed)
// and the fence open before it ("" for none), it updates fence and
// reports whether the line is a fence line or inside a fenced block, so
// no Markdown structure is looked for in it.
func trackFence(fence *string, trimmed string) bool {
	switch {
	case *fence != "":
		if strings.HasPrefix(trimmed, *fence) && strings.Trim(trimmed, (*fence)[:1]) == "" {
			*fence = ""
		}
		return true
	case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
		*fence = trimmed[:3]
		return true
	}
	return false
}

// continuesList reports whether the text after a blank line goes on with
// the block before it (an indented line: a list item's next paragraph).
func continuesList(rest string) bool {
	return strings.HasPrefix(rest, "  ") || strings.HasPrefix(rest, "\t")
}
