package tui

import (
	"reflect"
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
	r, err := glamour.NewTermRenderer(glamour.WithStyles(cfg), glamour.WithWordWrap(width))
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
// width, without the blank lines glamour puts around a document.
func (md *markdown) render(text string, width int) []string {
	width = max(width, 10)
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
		if lipgloss.Width(lines[i]) > width {
			lines[i] = truncate(lines[i], width)
		}
	}
	return lines
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
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
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

// continuesList reports whether the text after a blank line goes on with
// the block before it (an indented line: a list item's next paragraph).
func continuesList(rest string) bool {
	return strings.HasPrefix(rest, "  ") || strings.HasPrefix(rest, "\t")
}
