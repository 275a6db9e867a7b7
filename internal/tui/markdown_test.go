package tui

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMarkdownLayout renders replies in process (without colour, so the
// lines compare as text) and checks the layout Claude Code users expect:
// a single newline in a paragraph stays a line break, while lists, code
// and tables keep their own lines; a table is as wide as its content.
func TestMarkdownLayout(t *testing.T) {
	md := newMarkdown(ThemePlain)
	for _, tc := range []struct {
		name  string
		text  string
		width int
		want  []string
	}{
		{"single newlines in a paragraph stay", "First line\nsecond line of the same paragraph", 40,
			[]string{"First line", "second line of the same paragraph"}},
		{"a long line still wraps", "short\na line that is far too long for twenty", 20,
			[]string{"short", "a line that is far", "too long for twenty"}},
		{"a quote keeps its lines", "> quote a\n> quote b", 40,
			[]string{"│ quote a", "│ quote b"}},
		{"list items as they were", "- item one\n  continued\n- item two", 40,
			[]string{"• item one", "continued", "• item two"}},
		{"code keeps its lines", "```\nx\ny\n```", 40,
			[]string{"  x", "  y"}},
		{"a table as wide as its content", "| a | bb |\n|---|---|\n| 1 | 2 |", 60,
			[]string{" a │ bb", "───┼────", " 1 │ 2"}},
		{"a table beside a paragraph", "Before\nthe table:\n\n| a | bb |\n|---|---|\n| 1 | 2 |\n\nAfter.", 60,
			[]string{"Before", "the table:", "", " a │ bb", "───┼────", " 1 │ 2", "", "After."}},
		{"a table wider than the screen wraps to it", "| name | what it does |\n|---|---|\n| x | one two three four five six |", 24,
			[]string{" name │ what it does", "──────┼─────────────────", " x    │ one two three", "      │ four five six"}},
		{"a table in a list item is as wide as its content", "- item one\n\n  | a | bb |\n  |---|---|\n  | 1 | 2 |\n- item two", 60,
			[]string{"• item one", " a │ bb", "───┼────", " 1 │ 2", "• item two"}},
		{"a table in a nested item keeps the item's indentation", "1. first\n   - nested\n     | x | y |\n     |--|--|\n     | 3 | 4 |\n2. second", 60,
			[]string{"1. first", "  • nested", "   x │ y", "  ───┼───", "   3 │ 4", "2. second"}},
		{"a table in a list item wraps to the screen", "- item\n\n  | name | what it does |\n  |---|---|\n  | x | one two three four five six |", 24,
			[]string{"• item", " name │ what it does", "──────┼─────────────────", " x    │ one two three", "      │ four five six"}},
		{"an indented code block after a list and a paragraph is code", "- item\n\nPara.\n\n    | a | b |\n    |---|---|\n    | 1 | 2 |\n", 40,
			[]string{"• item", "", "Para.", "", "  | a | b |", "  |---|---|", "  | 1 | 2 |"}},
		{"a pipe in code is no table", "```\n| a |\n|---|\n```", 40,
			[]string{"  | a |", "  |---|"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := md.render(tc.text, tc.width)
			for i := range got {
				got[i] = stripANSI(got[i])
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("render(%q, %d) (-want +got):\n%s", tc.text, tc.width, d)
			}
		})
	}
}

func TestSplitTables(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []segment
	}{
		{"no table", "Just text\nand more", []segment{{text: "Just text\nand more"}}},
		{"a table between paragraphs", "Before:\n\n| a | b |\n| :-- | --: |\n| 1 | 2 |\n\nAfter",
			[]segment{{text: "Before:\n\n"}, {text: "| a | b |\n| :-- | --: |\n| 1 | 2 |\n", table: true}, {text: "\nAfter"}}},
		{"without outer pipes", "a | b\n--|--\n1 | 2", []segment{{text: "a | b\n--|--\n1 | 2", table: true}}},
		{"a heading's underline is no delimiter", "Title\n---\ntext", []segment{{text: "Title\n---\ntext"}}},
		{"cell counts differ", "| a | b |\n|---|\n| 1 | 2 |", []segment{{text: "| a | b |\n|---|\n| 1 | 2 |"}}},
		{"an escaped pipe is in a cell", "| a \\| b |\n|---|\n| 1 |", []segment{{text: "| a \\| b |\n|---|\n| 1 |", table: true}}},
		{"in a list item it stays in the list", "- item\n  | a |\n  |---|", []segment{{text: "- item\n  | a |\n  |---|"}}},
		{"in a code fence", "```\n| a |\n|---|\n```\n", []segment{{text: "```\n| a |\n|---|\n```\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, splitTables(tc.text), cmp.AllowUnexported(segment{})); d != "" {
				t.Errorf("splitTables(%q) (-want +got):\n%s", tc.text, d)
			}
		})
	}
}
