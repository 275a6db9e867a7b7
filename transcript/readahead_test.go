package transcript

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
)

// TestReadAheadChangesNothing: a load that reads the next block ahead of
// its turn, decoding it in the background, rebuilds the same conversation
// with the same warnings, in the same order, as one reading a block at a
// time — clean, damaged (garbage, a 20 MB line, a torn last line) and
// compacted transcripts, without a cache, and with one, loaded twice.
func TestReadAheadChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 40 MB of transcripts")
	}
	gen12 := func(o gen.Options) []byte {
		var b bytes.Buffer
		if _, err := gen.Generate(&b, o); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	files := map[string][]byte{
		"clean":     gen12(gen.Options{Size: 6 << 20, Seed: 3}),
		"damaged":   gen.Damage(gen12(gen.Options{Size: 6 << 20, Seed: 4})),
		"compacted": gen12(gen.Options{Size: 6 << 20, Seed: 5, CompactEvery: 2 << 20}),
	}
	type result struct {
		UUIDs              []string
		Leaf, LastPrompt   string
		Warnings           []string
		Repaired           int
		Messages           int
		Preserved, Cleared int
	}
	load := func(t *testing.T, data []byte, ahead int64, cache *LineCache) result {
		t.Helper()
		old, oldMax := readAheadAfter, maxLine
		readAheadAfter, maxLine = ahead, 1<<20 // the 20 MB line is the scanner's to skip
		defer func() { readAheadAfter, maxLine = old, oldMax }()
		src := BytesSource(data)
		n := 0
		conv, err := Load(t.Context(), src, LoadOptions{Cache: cache,
			NewUUID: func() string { n++; return fmt.Sprintf("new-%d", n) },
			Now:     func() time.Time { return time.Unix(0, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		r := result{Leaf: conv.Leaf, LastPrompt: conv.LastPrompt, Warnings: conv.Warnings, Repaired: conv.Repaired,
			Preserved: len(conv.Preserved), Cleared: len(conv.Cleared)}
		for _, e := range conv.Entries {
			r.UUIDs = append(r.UUIDs, e.UUID)
		}
		r.Messages = len(conv.Messages())
		return r
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			want := load(t, data, 1<<62, nil)
			if len(want.UUIDs) == 0 {
				t.Fatal("nothing loaded")
			}
			if name == "damaged" && (len(want.Warnings) < 3 || !strings.Contains(strings.Join(want.Warnings, "\n"), "longer than")) {
				t.Fatalf("damaged: warnings %q", want.Warnings)
			}
			for _, after := range []int64{0, 1 << 20} { // from the start; from 1 MB on
				if diff := cmp.Diff(want, load(t, data, after, nil)); diff != "" {
					t.Errorf("read ahead after %d bytes (-one block at a time +ahead):\n%s", after, diff)
				}
			}
			cache := &LineCache{}
			for i := range 2 {
				if diff := cmp.Diff(want, load(t, data, 0, cache)); diff != "" {
					t.Errorf("read ahead with a cache, load %d (-one block at a time +ahead):\n%s", i+1, diff)
				}
			}
		})
	}
}
