package transcript

import (
	"bytes"
	"testing"
	"testing/iotest"
)

// TestHeapOf: the heap a load builds goes by the lines of the file's end:
// short lines ask for more than 0.6 of the file (up to four times it),
// long ones for that; a
// file that cannot be read, and one smaller than the sample, are
// estimated too.
func TestHeapOf(t *testing.T) {
	const size = 10 << 20
	line := func(n int) []byte { return append(bytes.Repeat([]byte{'x'}, n-1), '\n') }
	short := bytes.Repeat(line(500), size/500)
	long := bytes.Repeat(line(100_000), size/100_000)
	// The lines of the sample, scaled to the file's size: within a
	// line of the sample's worth.
	if got, want := HeapOf(bytes.NewReader(short), int64(len(short))), int64(len(short)/500)*heapPerLine; got < want*99/100 || got > want*101/100 {
		t.Errorf("lines of 500 bytes: %d, want about %d (a line each)", got, want)
	}
	if got, want := HeapOf(bytes.NewReader(long), int64(len(long))), int64(len(long))*6/10; got != want {
		t.Errorf("lines of 100 KB: %d, want %d (0.6 of the file)", got, want)
	}
	tiny := bytes.Repeat(line(2), 1000)
	if got, want := HeapOf(bytes.NewReader(tiny), int64(len(tiny))), int64(len(tiny))*4; got != want {
		t.Errorf("lines of 2 bytes: %d, want %d (four times the file, at most)", got, want)
	}
	small := bytes.Repeat(line(1000), 200)
	if got, want := HeapOf(bytes.NewReader(small), int64(len(small))), int64(200)*heapPerLine; got != want {
		t.Errorf("a file smaller than the sample: %d, want %d", got, want)
	}
	if got, want := HeapOf(readerAt{}, size), int64(size)*6/10; got != want {
		t.Errorf("a file that cannot be read: %d, want %d", got, want)
	}
}

type readerAt struct{}

func (readerAt) ReadAt([]byte, int64) (int, error) { return 0, iotest.ErrTimeout }
