package serve

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/transcript"
)

// seekBlock is how much seekLine reads at a time (a variable for the
// tests, which make blocks smaller than a line).
var seekBlock int64 = 8 << 20

// seekLine finds the line of the event id in the size bytes of src the
// way history's line scan does — the last whole line (not the torn end,
// not over-long) holding the text "uuid":"<id>" whose top-level uuid is
// id, on a conversation event — but by a search of the raw bytes from the
// end, decoding only the lines the text is found in. ok is false for an
// id whose JSON text needs escapes (a quote, a backslash, a control
// character): only the line scan looks for those.
func seekLine(ctx context.Context, src io.ReaderAt, size int64, id string) (sp span, found, ok bool, err error) {
	if needsEscape(id) {
		return span{}, false, false, nil
	}
	pat := []byte(`"uuid":"` + id + `"`)
	buf := make([]byte, min(size, seekBlock)+int64(len(pat)))
	var hits []int
	find := jsonl.NewFinder(pat)
	// Each round looks for the text starting in [lo, hi), in a block read
	// with the len(pat)-1 bytes after hi: a text across two blocks is found.
	for hi := size; hi > 0; {
		if err := ctx.Err(); err != nil {
			return span{}, false, true, err
		}
		lo := max(0, hi-seekBlock)
		b := buf[:min(size, hi+int64(len(pat))-1)-lo]
		if _, err := src.ReadAt(b, lo); err != nil && err != io.EOF {
			return span{}, false, true, err
		}
		// The hits are found forwards (bytes.Index is vectorised and
		// LastIndex is not), then tried from the last. A pat starting
		// before lo is found in the next block, whole.
		hits = find.All(b, hits[:0])
		for n := len(hits) - 1; n >= 0; n-- {
			sp, isLine, err := lineAround(src, size, b, lo, hits[n])
			if err != nil {
				return span{}, false, true, err
			}
			if !isLine {
				continue
			}
			var line []byte
			if sp.off >= lo && sp.off+sp.n <= lo+int64(len(b)) {
				line = b[sp.off-lo : sp.off-lo+sp.n]
			} else {
				line = make([]byte, sp.n) // the line runs out of the block
				if _, err := src.ReadAt(line, sp.off); err != nil {
					return span{}, false, true, err
				}
			}
			if IsEvent(line, id) {
				return sp, true, true, nil
			}
		}
		hi = lo
	}
	return span{}, false, true, nil
}

// lineAround is the span of the line holding byte k of b, which holds
// src's bytes from lo; isLine is false for a line history skips: the torn
// end of src (no newline before size) or an over-long one.
func lineAround(src io.ReaderAt, size int64, b []byte, lo int64, k int) (sp span, isLine bool, err error) {
	var start, end int64
	if i := bytes.LastIndexByte(b[:k], '\n'); i >= 0 {
		start = lo + int64(i) + 1
	} else if start, err = findByte(src, lo, -1, size); err != nil {
		return span{}, false, err
	}
	if i := bytes.IndexByte(b[k:], '\n'); i >= 0 {
		end = lo + int64(k+i)
	} else if end, err = findByte(src, lo+int64(len(b)), 1, size); err != nil {
		return span{}, false, err
	}
	if end < 0 || end-start > jsonl.MaxLineBytes {
		return span{}, false, nil
	}
	return span{start, end - start}, true, nil
}

// findByte reads src from at for a newline, backwards (dir -1: the offset
// after the newline before at, 0 when none) or forwards (dir 1: the
// newline's offset at or after at, -1 when none before size).
func findByte(src io.ReaderAt, at int64, dir int, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for {
		if dir < 0 {
			if at == 0 {
				return 0, nil
			}
			lo := max(0, at-chunk)
			b := buf[:at-lo]
			if _, err := src.ReadAt(b, lo); err != nil && err != io.EOF {
				return 0, err
			}
			if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
				return lo + int64(i) + 1, nil
			}
			at = lo
			continue
		}
		if at >= size {
			return -1, nil
		}
		b := buf[:min(size, at+chunk)-at]
		if _, err := src.ReadAt(b, at); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return at + int64(i), nil
		}
		at += int64(len(b))
	}
}

// needsEscape reports whether id's JSON text is not id itself.
func needsEscape(id string) bool {
	return strings.ContainsFunc(id, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 })
}

// lineScanOnly, when set, has history find a before by its line scan
// alone: what the tests and the bench compare seekLine with.
var lineScanOnly atomic.Bool

// seekBefore is the span of before's line for history when no span is
// known: by seekLine (ErrUnknownBefore when it is not there); ok is false
// when the line scan is to find it.
func seekBefore(ctx context.Context, src transcript.Source, before string) (sp span, ok bool, err error) {
	if before == "" || lineScanOnly.Load() {
		return span{}, false, nil
	}
	sp, found, ok, err := seekLine(ctx, src, src.Size(), before)
	switch {
	case err != nil:
		return span{}, false, err
	case ok && !found:
		return span{}, false, ErrUnknownBefore
	}
	return sp, ok, nil
}
