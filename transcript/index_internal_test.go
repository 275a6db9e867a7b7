package transcript

import (
	"bytes"
	"context"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
)

// TestIndexTokens compares the index's raw-byte token estimate of each
// chain line with estimateEntry's of the decoded entry, over generated
// sessions: per line type, the two sums stay within 10% (attachments: 50%).
func TestIndexTokens(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		var buf bytes.Buffer
		if _, err := gen.Generate(&buf, gen.Options{Size: 2 << 20, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		x, err := NewIndex(context.Background(), bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		chain, _, _ := x.Chain("")
		raw, dec := map[string]int64{}, map[string]int64{}
		for _, i := range chain {
			l := x.Lines[i]
			e, err := DecodeEntry(b[l.Offset : l.Offset+int64(l.Length)])
			if err != nil {
				t.Fatal(err)
			}
			raw[l.Type] += int64(l.Tokens)
			dec[l.Type] += estimateEntry(&e)
		}
		for typ, d := range dec {
			r := raw[typ]
			t.Logf("seed %d, %s lines: raw estimate %d tokens, decoded %d (%.3f)", seed, typ, r, d, float64(r)/float64(max(d, 1)))
			hi := 1.1
			if typ == TypeAttachment {
				// Counted as the attachment's JSON, not the text it renders
				// to: a few tokens high for each.
				hi = 1.5
			}
			if float64(r) < 0.9*float64(d) || float64(r) > hi*float64(d) {
				t.Errorf("seed %d, %s lines: raw estimate %d tokens, decoded %d: more than 10%% apart", seed, typ, r, d)
			}
		}
	}
}
