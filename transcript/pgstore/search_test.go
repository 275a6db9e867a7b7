package pgstore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTsvectorOf(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"Hello, hello WORLD", "'hello':1,2 'world':3"},
		{"file_path=/usr/bin/go-1.26", "'1':6 '26':7 'bin':4 'file':1 'go':5 'path':2 'usr':3"},
		{"Ünïcode straße ΣΊΣΥΦΟΣ", "'straße':2 'ünïcode':1 'σίσυφοσ':3"},
		{"it's \"quoted\" \\ back", "'back':4 'it':1 'quoted':3 's':2"},
		{strings.Repeat("x", 256) + " ok", "'ok':1"}, // not a word
	} {
		if got := tsvectorOf(tt.in).String(); got != tt.want {
			t.Errorf("tsvectorOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Positions stop at the server's limits.
	got := tsvectorOf(strings.Repeat("a ", 20000))
	if n := len(got.Lexemes[0].Positions); n != maxPositions {
		t.Errorf("%d positions of a word said 20,000 times", n)
	}
	got = tsvectorOf(strings.Repeat("a ", 16384) + "b c")
	if p := got.Lexemes[1].Positions[0].Position; p != maxPosition || len(got.Lexemes[2].Positions) != 1 {
		t.Errorf("words past the last position: %v", got)
	}
}

func TestTsqueryOf(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"zebrafish parser", "'zebrafish' & 'parser'"},
		{`"migration failed" -retry`, "('migration' <-> 'failed') & !'retry'"},
		{"quokka or wombat", "'quokka' | 'wombat'"},
		{"or quokka OR", "'quokka'"},
		{"pkg.Func(x)", "('pkg' <-> 'func' <-> 'x')"},
		{`unclosed "phrase here`, "'unclosed' & ('phrase' <-> 'here')"},
		{"-or", "!'or'"},
		{"'; DROP TABLE x; --", "'drop' & 'table' & 'x'"},
	} {
		got, ok := tsqueryOf(tt.in)
		if d := cmp.Diff(tt.want, got); d != "" || !ok {
			t.Errorf("tsqueryOf(%q) ok=%v (-want +got):\n%s", tt.in, ok, d)
		}
	}
	for _, empty := range []string{"", "  ", "!!!", `""`, "or"} {
		if got, ok := tsqueryOf(empty); ok {
			t.Errorf("tsqueryOf(%q) = %q, ok", empty, got)
		}
	}
}
