package shellsafe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	vars := func(name string) (string, bool) {
		switch name {
		case "HOME":
			return "/home/u", true
		case "SPACED":
			return "/a b", true
		}
		return "", false
	}
	for _, tc := range []struct {
		word string
		want string
		ok   bool
	}{
		{`"$HOME/.config"`, "/home/u/.config", true},
		{`${HOME}/x`, "/home/u/x", true},
		{`$HOME`, "/home/u", true},
		{`'$HOME'`, "$HOME", true},
		{`"$SPACED/x"`, "/a b/x", true},
		{`$SPACED/x`, "", false}, // split into two words
		{`$OTHER/x`, "", false},
		{`${HOME:-/tmp}`, "", false},
		{`$(echo /tmp)`, "", false},
		{`"$HOME"/*`, "", false},
	} {
		cs := Parse(": " + tc.word).Commands
		w := cs[len(cs)-1].Args[1] // substitutions come first
		got, ok := Expand(w, vars)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Expand(%s) = %q, %v; want %q, %v", tc.word, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFlow: After links a command to the one before its &&; Repeats marks
// loop and function bodies.
func TestFlow(t *testing.T) {
	s := Parse("cd a && cd b && make; ls; for i in x; do cd ..; done; f() { cd /; }; cd c || pwd")
	type row struct {
		Cmd, After string
		Repeats    bool
	}
	var got []row
	for _, c := range s.All() {
		r := row{Cmd: c.Text(), Repeats: c.Repeats}
		if c.After != nil {
			r.After = c.After.Text()
		}
		got = append(got, r)
	}
	want := []row{
		{"cd a", "", false}, {"cd b", "cd a", false}, {"make", "cd b", false}, {"ls", "", false},
		{"cd ..", "", true}, {"cd /", "", true}, {"cd c", "", false}, {"pwd", "", false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}
