package permission

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
		err  bool
	}{
		{in: "Bash", want: Rule{Tool: "Bash"}},
		{in: " Bash(npm run test:*) ", want: Rule{Tool: "Bash", Specifier: "npm run test:*"}},
		{in: "Read(./src/**)", want: Rule{Tool: "Read", Specifier: "./src/**"}},
		{in: "Bash(echo (a))", want: Rule{Tool: "Bash", Specifier: "echo (a)"}},
		{in: "mcp__github__get_*", want: Rule{Tool: "mcp__github__get_*"}},
		{in: "WebFetch(domain:example.com)", want: Rule{Tool: "WebFetch", Specifier: "domain:example.com"}},
		{in: "Bash(npm", err: true},
		{in: "", err: true},
		{in: "(x)", err: true},
		{in: "not a tool", err: true},
	} {
		got, err := ParseRule(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseRule(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" && !tc.err {
			t.Errorf("ParseRule(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestSplitRules(t *testing.T) {
	got := SplitRules("Bash(git log:*) Bash(git diff:*),Edit  Read(./a b)")
	want := []string{"Bash(git log:*)", "Bash(git diff:*)", "Edit", "Read(./a b)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SplitRules (-want +got):\n%s", diff)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"", "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
	if _, err := ParseMode("yolo"); err == nil {
		t.Error("ParseMode(yolo) did not fail")
	}
}

// FuzzParseRule: any text either parses into a rule that prints back to
// itself and compiles and matches without panicking, or is refused with
// a message; refused text makes a broken rule that still names a tool or
// none.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash(git status:*)", "Bash(npm run test *)", "Read(./src/**)", "WebFetch(domain:*.x.com)",
		"mcp__gh__get_*", "Bash(rm -rf:*", "Web Fetch", "Bash(a\\*b*)", "Bash()", "Edit(//etc/**)", "Bash($(x):*)"} {
		f.Add(s)
	}
	proj := f.TempDir()
	cmds := []json.RawMessage{input("command", "git status; rm -rf ~"), input("command", "npm run test -- -x"), input("command", "echo $(id) > f")}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty message")
			}
			b := broken(s, err)
			if b.Tool != "" && !toolName.MatchString(b.Tool) {
				t.Fatalf("broken rule names %q", b.Tool)
			}
			return
		}
		if again, err := ParseRule(r.String()); err != nil || again != r {
			t.Fatalf("%q → %+v prints as %q → %+v, %v", s, r, r.String(), again, err)
		}
		rs := Rules{Deny: []Rule{r}, Allow: []Rule{r}}.Compile()
		for _, in := range cmds {
			d := Decide(context.Background(), Request{Tool: "Bash", Input: in, Rules: rs, ProjectDir: proj})
			if d.Reason == "" {
				t.Fatalf("%q: no reason", s)
			}
		}
	})
}
