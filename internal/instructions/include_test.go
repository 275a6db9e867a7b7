package instructions

import (
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/itertest"
)

func TestIncludeTokens(t *testing.T) {
	for text, want := range map[string][]string{
		"@a.md @./b.md @~/c.md @/d.md":                {"a.md", "./b.md", "~/c.md", "/d.md"},
		"see `@x.md` and ``@y.md ` still`` @z.md":     {"z.md"},
		"```\n@in-fence.md\n```\n@after.md":           {"after.md"},
		"~~~~\n@a.md\n```\n@still-in.md\n~~~~\n@b.md": {"b.md"},
		"    @indented.md\n@x\\ y.md":                 {"x y.md"},
		"me@host.com @ @@double (@paren.md)":          nil,
		"@!bang @#hash":                               nil,
	} {
		if diff := cmp.Diff(want, includes(text)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", text, diff)
		}
	}
}

func FuzzIncludes(f *testing.F) {
	for _, s := range []string{"@a.md", "```\n@b\n```", "`@c` @d", "@e\\ f", "x@y @z#frag", "~~~\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range includes(text) {
			if tok == "" || strings.ContainsAny(tok, "\n\t") || !plausible(tok) {
				t.Fatalf("token %q from %q", tok, text)
			}
			_ = resolve(tok, "/p/CLAUDE.md", "/home")
		}
	})
}

// TestLinesBreak: lines stops where its consumer stops, in and out of a
// code block.
func TestLinesBreak(t *testing.T) {
	n := itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[string, bool] {
		return lines("text\n```\ncode\n```\n    indented\nmore")
	}, nil)
	if n != 6 {
		t.Errorf("%d lines, want 6", n)
	}
}
