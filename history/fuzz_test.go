package history

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeLine checks that no line makes the decoder panic, and that an
// entry it accepts is written back as one valid JSON line that decodes to
// the same entry.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"display":"hi","pastedContents":{},"timestamp":1761234567890,"project":"/p","sessionId":"s"}`,
		`{"display":"[Pasted text #1 +2 lines]","pastedContents":{"1":{"id":1,"type":"text","content":"a\nb\nc"}},"timestamp":1761234567890,"project":"/p","sessionId":"s"}`,
		`{"display":"x","pastedContents":{"2":{"id":2,"type":"text","contentHash":"0123456789abcdef"},"3":{"id":3,"type":"image","mediaType":"image/png","filename":"a.png"}},"timestamp":1.5e12,"project":"/p"}`,
		`{"display":"x","pastedContents":{"01":{"id":1},"-1":{"id":-1},"1":{"id":"1"}},"timestamp":-0,"project":""}`,
		`{"display":"x","timestamp":1e400,"project":"/p"}`,
		`{"display":"x","project":null}`,
		"\x00\x00{\"project\":\"/p\"}\x00",
		`{"display":"torn","pastedCon`,
		`{"display":"\u2028<&>\ud800","project":"/p"}`,
		`[]`, `null`, ``, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := decodeLine(line)
		if !ok {
			return
		}
		out := appendLine(nil, e)
		if bytes.IndexByte(out[:len(out)-1], '\n') >= 0 || out[len(out)-1] != '\n' {
			t.Fatalf("encoded entry is not one line: %q", out)
		}
		if !json.Valid(out) {
			t.Fatalf("encoded entry is not JSON: %q", out)
		}
		back, ok := decodeLine(out)
		if !ok {
			t.Fatalf("re-encoded entry %q does not decode", out)
		}
		if diff := cmp.Diff(e, back, equateEmpty); diff != "" {
			t.Fatalf("round trip of %q (-first +second):\n%s", line, diff)
		}
	})
}
