package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"testing"
)

// TestPlainWord checks the eight-byte test String skips plain runs with,
// and the first byte it finds not plain,
// against its definition, byte by byte: every byte value at every place
// among plain and other bytes, and every pair of neighbours (a carry
// from one byte into the next must not hide either).
func TestPlainWord(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && plain(c)
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("plainWord(% x) = %v, want %v", w, got, want)
		}
		// The lowest bit specialBytes sets marks the first byte that
		// is not plain (plainRun jumps to it).
		if m := specialBytes(binary.LittleEndian.Uint64(w[:])); m != 0 {
			first := 0
			for plain(w[first]) {
				first++
			}
			if got := bits.TrailingZeros64(m) >> 3; got != first {
				t.Fatalf("specialBytes(% x) marks byte %d first, want %d", w, got, first)
			}
		}
	}
	for _, fill := range []byte{'a', 0x7f, 0x20, 0x1f, '"', '\\', 0x80, 0xff} {
		for at := range 8 {
			for c := range 256 {
				w := [8]byte{fill, fill, fill, fill, fill, fill, fill, fill}
				w[at] = byte(c)
				check(w)
			}
		}
	}
	for at := range 7 {
		for c := range 256 {
			for d := range 256 {
				w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
				w[at], w[at+1] = byte(c), byte(d)
				check(w)
			}
		}
	}
}
