package transcript

import (
	"bytes"
	"slices"
	"testing"
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
		err := scanForward(bytes.NewReader(data), func(string) { t.Fatal("unexpected warning") }, func(l rawLine) error {
			fwd = append(fwd, string(l.Bytes))
			fwdOff = append(fwdOff, l.Offset)
			tornF = l.Torn
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sc := newBackwardScanner(bytes.NewReader(data), int64(len(data)), func(string) { t.Fatal("unexpected warning") })
		sc.block = int64(1 + (block%16+16)%16) // small blocks exercise lines spanning reads
		var back []string
		var backOff []int64
		var tornB bool
		for first := true; ; first = false {
			l, ok, err := sc.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if first {
				tornB = l.Torn
			} else if l.Torn {
				t.Fatalf("line at %d marked torn but is not last", l.Offset)
			}
			back = append(back, string(l.Bytes))
			backOff = append(backOff, l.Offset)
		}
		slices.Reverse(back)
		slices.Reverse(backOff)
		if !slices.Equal(fwd, back) || !slices.Equal(fwdOff, backOff) {
			t.Fatalf("forward %q %v\nbackward %q %v", fwd, fwdOff, back, backOff)
		}
		if len(fwd) > 0 && tornF != tornB {
			t.Fatalf("torn: forward %v backward %v", tornF, tornB)
		}
	})
}

func TestBackwardScannerLongLines(t *testing.T) {
	long := bytes.Repeat([]byte("y"), 3*backwardBlock+17)
	data := slices.Concat([]byte("first\n"), long, []byte("\nlast\n"))
	sc := newBackwardScanner(bytes.NewReader(data), int64(len(data)), func(w string) { t.Fatal(w) })
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
