package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// failingReader gives its text, then fails.
type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("device gone")
	}
	return n, err
}

// readLines numbers the lines; a line over the limit is an error naming
// it and the lines after it still come (bufio.Scanner would stop there
// without a word); a failed read is a fatal error naming its line; the
// last line needs no newline; CRLF endings are dropped.
func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 200_000) // longer than the reader's buffer too
	for _, tc := range []struct {
		name string
		r    io.Reader
		want []string
	}{
		{"plain", strings.NewReader("a\nb\r\n\nlast"), []string{"1 a", "2 b", "3 ", "4 last"}},
		{"too long", strings.NewReader("a\n" + long + "\nc\n"), []string{"1 a", "error line 2: stdin line 2 is longer than the 100000 bytes a line may be; it is skipped (send large content as a file the model can read)", "3 c"}},
		{"too long at the end", strings.NewReader("a\n" + long), []string{"1 a", "error line 2: stdin line 2 is longer than the 100000 bytes a line may be; it is skipped (send large content as a file the model can read)"}},
		{"just fits", strings.NewReader(strings.Repeat("y", 100_000) + "\nz\n"), []string{fmt.Sprintf("1 %d bytes", 100_000), "2 z"}},
		{"read fails", failingReader{strings.NewReader("a\nb")}, []string{"1 a", "fatal line 2: stdin line 2 could not be read (device gone); no more input is read, the session ends after the turn under way"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make(chan inputRecord)
			go readLines(context.Background(), tc.r, 100_000, out)
			var got []string
			for rec := range out {
				switch {
				case rec.err != nil && rec.fatal:
					got = append(got, fmt.Sprintf("fatal line %d: %v", rec.n, rec.err))
				case rec.err != nil:
					got = append(got, fmt.Sprintf("error line %d: %v", rec.n, rec.err))
				case len(rec.text) > 1000:
					got = append(got, fmt.Sprintf("%d %d bytes", rec.n, len(rec.text)))
				default:
					got = append(got, fmt.Sprintf("%d %s", rec.n, rec.text))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
