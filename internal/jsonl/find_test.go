package jsonl

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFinder: a Finder finds every place a text starts, as a plain search
// does, whichever of its bytes it starts from; a text shorter than 8
// bytes included.
func TestFinder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(400))
		for i := range b {
			b[i] = `"uid:ab-`[r.IntN(8)]
		}
		pat := slices.Clone(b[r.IntN(len(b)+1):])
		pat = pat[:min(len(pat), 1+r.IntN(14))]
		if len(pat) == 0 {
			pat = []byte(`"u`)
		}
		var want []int
		for i := 0; i+len(pat) <= len(b); i++ {
			if bytes.Equal(b[i:i+len(pat)], pat) {
				want = append(want, i)
			}
		}
		f := NewFinder(pat)
		if got := f.All(b, nil); !slices.Equal(got, want) {
			t.Fatalf("All(%q, %q) = %v, want %v", b, pat, got, want)
		}
		if f.In(b) != (len(want) > 0) {
			t.Fatalf("In(%q, %q) = %v", b, pat, !(len(want) > 0))
		}
	}
}
