package instructions

import "testing"

func TestCompactGuidance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"none", []string{"# Build\nmake\n"}, ""},
		{"a section to the end", []string{"# Build\nmake\n\n# Compact instructions\nKeep test output.\n"}, "# Compact instructions\nKeep test output."},
		{"stops at a heading of its level", []string{"## Summary instructions\nFocus on code changes.\n### Detail\nand diffs\n## Style\ntabs\n"},
			"## Summary instructions\nFocus on code changes.\n### Detail\nand diffs"},
		{"stops at a higher level", []string{"# Project\n## When compacting\nKeep the ZEBRA-7 code.\n# Other\nx\n"}, "## When compacting\nKeep the ZEBRA-7 code."},
		{"not in code", []string{"```\n# compact instructions\n```\n    # compact indented\n"}, ""},
		{"not a heading", []string{"#compact\nsummary: no\n"}, ""},
		{"files in order", []string{"# Compact\nA\n", "# Summaries\nB\n"}, "# Compact\nA\n\n# Summaries\nB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []File
			for _, c := range tc.files {
				files = append(files, File{Content: c})
			}
			if got := CompactGuidance(files); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
