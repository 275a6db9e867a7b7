package instructions

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
