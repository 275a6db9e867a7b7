package instructions

import (
	"regexp"
	"strings"
	"sync"
)

// guidanceHeading is a Markdown heading about compaction or summaries:
// "# Compact instructions", "## Summary instructions", "### When compacting".
var guidanceHeading = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(#{1,6})\s+.*\b(compact|summar)`) })

// CompactGuidance returns what the files say about compaction: each
// section whose heading names compaction or summaries ("# Compact
// instructions", "## Summary instructions"), down to the next heading of
// the same or a higher level, in the files' order. A summary request adds
// it to its instruction, so a team's wishes hold for automatic
// compactions as for /compact (SPEC C4). Headings inside code blocks do
// not count.
func CompactGuidance(files []File) string {
	var sections []string
	for _, f := range files {
		var cur []string
		level := 0
		flush := func() {
			if text := strings.TrimSpace(strings.Join(cur, "\n")); text != "" {
				sections = append(sections, text)
			}
			cur, level = nil, 0
		}
		for line, code := range lines(f.Content) {
			if h := headingLevel(line); h > 0 && !code {
				if level > 0 && h <= level {
					flush()
				}
				if level == 0 && guidanceHeading().MatchString(line) {
					level = h
				}
			}
			if level > 0 {
				cur = append(cur, line)
			}
		}
		flush()
	}
	return strings.Join(sections, "\n\n")
}

// headingLevel returns the level of a Markdown ATX heading, 0 if line is
// not one.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ' && line[n] != '\t') {
		return 0
	}
	return n
}
