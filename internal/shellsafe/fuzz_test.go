package shellsafe

import (
	"strings"
	"testing"
)

// FuzzParse checks that no input panics, that whatever is reported as
// fixed really is, and that Classify agrees with Parse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"git status; rm -rf ~", "echo $(rm x) `id` <(ls)", "FOO=1 rm -rf /", "sudo -u x timeout 5 xargs rm", "a\x00b", "$($($($(x))))", "cd - && cd $OLDPWD",
		"bash -c 'sh -c \"eval ls\"'", "cat <<EOF\n$(x)\nEOF", "{a,b}{c,d}", "$'\\x72m' -rf /", "if (", "a\\",
		"f() { g; }; f", "for i in *; do rm \"$i\"; done", "find . -exec sh -c 'rm $1' _ {} \\;", "echo ${x:-$(rm y)}",
		"env -S 'rm -rf /'", "x=(1 2); ${x[@]}", "coproc cat", "echo {1..1000}{1..1000}", "$((1))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s := Parse(src)
		for _, c := range s.All() {
			if c == nil {
				t.Fatal("nil command")
			}
			for _, w := range c.Args {
				if !w.Dynamic && strings.Contains(w.Value, "$(") && !strings.ContainsAny(src, "'\\") && !strings.Contains(src, "<<") {
					t.Fatalf("word %q of %q contains a substitution but is not dynamic", w.Value, src)
				}
			}
		}
		if s.Dynamic && len(s.Reasons) == 0 {
			t.Fatalf("%q is dynamic without a reason", src)
		}
		if !s.Dynamic && len(s.Reasons) > 0 {
			t.Fatalf("%q has reasons %q but is not dynamic", src, s.Reasons)
		}
		c := s.Classify(Options{Exists: func(string) bool { return true }})
		if c.ReadOnly && c.Destructive {
			t.Fatalf("%q is both read-only and destructive", src)
		}
		if len(s.Whole) > 0 && c.ReadOnly {
			t.Fatalf("%q cannot be read (%q) yet is read-only", src, s.Whole)
		}
	})
}
