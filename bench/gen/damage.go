package gen

import (
	"bytes"
	"strings"
)

// Damage returns a copy of the transcript b with the damage a crash, a
// bad disk or a buggy writer leaves, none of which touches its entries:
// a line of garbage after the line in the middle, a 20 MB line that is
// not an entry (a write cut short and run into the next) after the line
// at three quarters, and a last line cut off halfway, without its
// newline. The loader must warn about each and lose nothing else.
func Damage(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	n := len(lines)
	huge := `{"parentUuid":"` + strings.Repeat("9", 20<<20) + "\n"
	var out bytes.Buffer
	out.Grow(len(b) + len(huge) + 1<<10)
	for i, l := range lines {
		out.Write(l)
		switch i {
		case n / 2:
			out.WriteString("}{ this line is garbage: \x01\x02 not JSON at all ]\n")
		case n * 3 / 4:
			out.WriteString(huge)
		}
	}
	out.WriteString(`{"parentUuid":"00000000-0000-4000-8000-000000000000","isSidechain":false,"type":"user","message":{"role":"user","content":"cut off`)
	return out.Bytes()
}
