package jsonl

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzScanners checks that reading a file backwards yields exactly the lines
// reading it forwards does, in reverse, including a torn last line.
func FuzzScanners(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Add([]byte("no newline"), 2)
	f.Add(bytes.Repeat([]byte("x\n"), 100), 7)
	f.Fuzz(func(t *testing.T, data []byte, block int) {
		var fwd []string
		var fwdOff []int64
		var tornF bool
		err := Forward(bytes.NewReader(data), 0, func(string) { t.Fatal("unexpected warning") }, func(l Line) error {
			fwd = append(fwd, string(l.Bytes))
			fwdOff = append(fwdOff, l.Offset)
			tornF = l.Torn
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, reuse := range []bool{false, true} {
			// Small blocks exercise lines spanning reads.
			sc := NewBackward(bytes.NewReader(data), int64(len(data)), 1+(block%16+16)%16, 0, func(string) { t.Fatal("unexpected warning") })
			if reuse {
				sc.Buffers((&buffers{}).get)
			}
			back, backOff, tornB := backward(t, sc)
			if !slices.Equal(fwd, back) || !slices.Equal(fwdOff, backOff) {
				t.Fatalf("reuse %v: forward %q %v\nbackward %q %v", reuse, fwd, fwdOff, back, backOff)
			}
			if len(fwd) > 0 && tornF != tornB {
				t.Fatalf("reuse %v: torn: forward %v backward %v", reuse, tornF, tornB)
			}
		}
	})
}

// buffers hands out the buffers of sc.Buffers as the contract allows,
// soonest, to a reader done with the lines of each read before it reads
// again: every buffer but the last one got is given out again, filled
// with garbage first so that a line still in it shows.
type buffers struct {
	free, out [][]byte
}

func (b *buffers) get(n int) []byte {
	if k := len(b.out) - 1; k > 0 {
		for _, buf := range b.out[:k] {
			buf = buf[:cap(buf)]
			for i := range buf {
				buf[i] = '#'
			}
			b.free = append(b.free, buf[:0])
		}
		b.out = append(b.out[:0], b.out[k])
	}
	i := slices.IndexFunc(b.free, func(f []byte) bool { return cap(f) >= n })
	var buf []byte
	if i >= 0 {
		buf = b.free[i]
		b.free = slices.Delete(b.free, i, i+1)
	} else {
		buf = make([]byte, 0, n)
	}
	b.out = append(b.out, buf)
	return buf
}

// backward reads every line of sc and returns them oldest first. It reads
// as the loader does: each line a read of a block gives (the next one and
// those Buffered then counts) is taken, and its bytes used, before the
// next read.
func backward(t *testing.T, sc *Backward) (lines []string, offs []int64, torn bool) {
	for first := true; ; first = false {
		l, ok, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if first {
			torn = l.Torn
		} else if l.Torn {
			t.Fatalf("line at %d marked torn but is not last", l.Offset)
		}
		batch := []Line{l}
		for range sc.Buffered() {
			l, _, _ := sc.Next()
			if l.Torn {
				t.Fatalf("line at %d marked torn but is not last", l.Offset)
			}
			batch = append(batch, l)
		}
		for _, l := range batch {
			lines = append(lines, string(l.Bytes))
			offs = append(offs, l.Offset)
		}
	}
	slices.Reverse(lines)
	slices.Reverse(offs)
	return lines, offs, torn
}

func TestBackwardScannerLongLines(t *testing.T) {
	long := bytes.Repeat([]byte("y"), 3*DefaultBlock+17)
	data := slices.Concat([]byte("first\n"), long, []byte("\nlast\n"))
	sc := NewBackward(bytes.NewReader(data), int64(len(data)), 0, 0, func(w string) { t.Fatal(w) })
	var got []int
	for {
		l, ok, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, len(l.Bytes))
	}
	if want := []int{4, len(long), 5}; !slices.Equal(got, want) {
		t.Errorf("line lengths %v, want %v", got, want)
	}
}

func TestBackwardSkipsOverlongLines(t *testing.T) {
	data := []byte("a\n" + string(bytes.Repeat([]byte("z"), 100)) + "\nb\n")
	var warned []string
	sc := NewBackward(bytes.NewReader(data), int64(len(data)), 8, 50, func(w string) { warned = append(warned, w) })
	var got []string
	for {
		l, ok, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(l.Bytes))
	}
	if !slices.Equal(got, []string{"b", "a"}) || len(warned) != 1 {
		t.Errorf("lines %q, warnings %q; want [b a] and one warning", got, warned)
	}
}

func TestLinesBackward(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		block  int
		maxLen int
		want   []string
	}{
		{"empty", "", 4, 100, nil},
		{"one line no newline", "abc", 4, 100, []string{"abc"}},
		{"final newline", "a\nbb\n", 2, 100, []string{"bb", "a"}},
		{"lines across blocks", "one\ntwo\nthree", 3, 100, []string{"three", "two", "one"}},
		{"block of 1", "ab\n\ncd", 1, 100, []string{"cd", "", "ab"}},
		{"long line skipped", "ok\n" + strings.Repeat("L", 20) + "\nfine", 4, 8, []string{"fine", "ok"}},
		{"long first line skipped", strings.Repeat("L", 20) + "\nfine", 3, 8, []string{"fine"}},
		{"exactly max", "12345678\nx", 3, 8, []string{"x", "12345678"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			sc := NewBackward(strings.NewReader(tt.in), int64(len(tt.in)), tt.block, tt.maxLen, nil)
			for {
				l, ok, err := sc.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				got = append(got, string(l.Bytes))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBackwardLongLineAtTheLimit: a line spanning many blocks is read
// whole up to maxLine bytes, and one far longer is skipped with one
// warning, wherever its start falls (the file's first line or one after a
// newline). (Just past maxLine, a line whose start is read with its end
// may still be given.)
func TestBackwardLongLineAtTheLimit(t *testing.T) {
	const block, maxLine = 8, 100
	for _, prefix := range []string{"", "a\n"} {
		for _, n := range []int{maxLine - 1, maxLine, 3 * maxLine} {
			long := string(bytes.Repeat([]byte("z"), n))
			data := []byte(prefix + long + "\nb\n")
			var warned []string
			sc := NewBackward(bytes.NewReader(data), int64(len(data)), block, maxLine, func(w string) { warned = append(warned, w) })
			got, _, _ := backward(t, sc)
			var want []string // in file order, as backward gives them
			if prefix != "" {
				want = append(want, "a")
			}
			if n <= maxLine {
				want = append(want, long)
			}
			want = append(want, "b")
			if !slices.Equal(got, want) || (len(warned) == 1) != (n > maxLine) {
				t.Errorf("prefix %q, a line of %d: lines of %v, warnings %q", prefix, n, lens(got), warned)
			}
		}
	}
}

func lens(lines []string) []int {
	out := make([]int, len(lines))
	for i, l := range lines {
		out[i] = len(l)
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// TestBackwardOverlongLineReadOnce: skipping a line far over maxLine reads
// the file about once, not again at each of the reads that look for the
// line's start.
func TestBackwardOverlongLineReadOnce(t *testing.T) {
	const block, maxLine = 8, 4096
	data := []byte("a\n" + string(bytes.Repeat([]byte("z"), 2*maxLine)) + "\nb\n")
	r := &countingReader{r: bytes.NewReader(data)}
	var warned []string
	sc := NewBackward(r, int64(len(data)), block, maxLine, func(w string) { warned = append(warned, w) })
	got, _, _ := backward(t, sc)
	if !slices.Equal(got, []string{"a", "b"}) || len(warned) != 1 {
		t.Fatalf("lines %q, warnings %q; want [a b] and one warning", got, warned)
	}
	if r.n > 2*int64(len(data)) {
		t.Errorf("read %d bytes of a %d-byte file", r.n, len(data))
	}
}
