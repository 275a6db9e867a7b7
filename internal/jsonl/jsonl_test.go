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
// reading it forwards does, in reverse, including a torn last line, and
// numbers them as it does; and that with SkipLong, the lines it cuts are
// long ones skip said to, the others as they were.
func FuzzScanners(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Add([]byte("no newline"), 2)
	f.Add(bytes.Repeat([]byte("x\n"), 100), 7)
	f.Fuzz(func(t *testing.T, data []byte, block int) {
		var fwd []string
		var fwdOff []int64
		var fwdNo []int
		var tornF bool
		err := Forward(bytes.NewReader(data), 0, func(string) { t.Fatal("unexpected warning") }, func(l Line) error {
			fwd = append(fwd, string(l.Bytes))
			fwdOff = append(fwdOff, l.Offset)
			fwdNo = append(fwdNo, l.No)
			tornF = l.Torn
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Small blocks exercise lines spanning reads.
		blockSize := 1 + (block%16+16)%16
		for _, reuse := range []bool{false, true} {
			sc := NewBackward(bytes.NewReader(data), int64(len(data)), blockSize, 0, func(string) { t.Fatal("unexpected warning") })
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
		for _, reuse := range []bool{false, true} {
			sc := NewBackward(bytes.NewReader(data), int64(len(data)), blockSize, 0, func(string) { t.Fatal("unexpected warning") })
			if reuse {
				sc.Buffers((&buffers{}).get)
			}
			skip := func(tail []byte) bool { return tail[len(tail)-1]%2 == 0 }
			sc.SkipLong(skip)
			lines := backwardLines(t, sc)
			if len(lines) != len(fwd) {
				t.Fatalf("reuse %v: %d lines backward with SkipLong, %d forward", reuse, len(lines), len(fwd))
			}
			for i, l := range lines {
				if no := sc.Number(l, 0); no != fwdNo[i] || l.Offset != fwdOff[i] {
					t.Fatalf("reuse %v: line %d at %d backward, %d at %d forward", reuse, no, l.Offset, fwdNo[i], fwdOff[i])
				}
				switch want := fwd[i]; {
				case !l.Cut && string(l.Bytes) != want:
					t.Fatalf("reuse %v: line %d is %q, want %q", reuse, fwdNo[i], l.Bytes, want)
				case l.Cut && (l.Bytes != nil || len(want) < blockSize || !skip([]byte(want))):
					t.Fatalf("reuse %v: line %d (%q) cut", reuse, fwdNo[i], want)
				}
			}
		}
	})
}

// backwardLines reads every line of sc as backward does and returns
// them oldest first, their bytes copied.
func backwardLines(t *testing.T, sc *Backward) []Line {
	var lines []Line
	for {
		l, ok, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		batch := []Line{l}
		for range sc.Buffered() {
			l, _, _ := sc.Next()
			batch = append(batch, l)
		}
		for _, l := range batch {
			if l.Bytes != nil {
				l.Bytes = bytes.Clone(l.Bytes)
			}
			lines = append(lines, l)
		}
	}
	slices.Reverse(lines)
	return lines
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

// TestBackwardSkipLong: a long line SkipLong's function says to skip is
// given cut, at its offset and with its number, read only to find its
// start (the lines around it as they were); one it does not is read
// whole.
func TestBackwardSkipLong(t *testing.T) {
	const block = 64
	long := strings.Repeat("z", 40*block)
	for _, tc := range []struct {
		name, end string
		cut       bool
	}{
		{"skipped", "!", true},
		{"kept", "}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte("a\n\n" + long + tc.end + "\nb\n")
			r := &countingReader{r: bytes.NewReader(data)}
			sc := NewBackward(r, int64(len(data)), block, 0, func(w string) { t.Fatal(w) })
			var asked []string
			sc.SkipLong(func(tail []byte) bool {
				asked = append(asked, string(tail[len(tail)-1:]))
				return bytes.HasSuffix(tail, []byte("!"))
			})
			lines := backwardLines(t, sc)
			if !slices.Equal(asked, []string{tc.end}) {
				t.Fatalf("asked about lines ending in %q, want only the long one", asked)
			}
			if len(lines) != 4 {
				t.Fatalf("%d lines, want 4", len(lines))
			}
			type got struct {
				Text   string
				Offset int64
				No     int
				Cut    bool
			}
			var gotLines []got
			for _, l := range lines {
				gotLines = append(gotLines, got{string(l.Bytes), l.Offset, sc.Number(l, 0), l.Cut})
			}
			kept := long + tc.end
			if tc.cut {
				kept = ""
			}
			want := []got{{"a", 0, 1, false}, {"", 2, 2, false}, {kept, 3, 3, tc.cut}, {"b", int64(len(data) - 2), 4, false}}
			if diff := cmp.Diff(want, gotLines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if tc.cut && r.n > int64(len(data))+2*block {
				t.Errorf("read %d bytes of a %d-byte file to skip its long line", r.n, len(data))
			}
		})
	}
}
