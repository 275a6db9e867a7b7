package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"testing"
)

// plain is the definition plainWord and plainRun go by: a byte a string
// holds as it is, which is any but a control character, a quote and a
// backslash (the bytes of a multi-byte UTF-8 sequence are plain).
func plain(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// TestPlainWord checks the eight-byte test String skips plain runs with,
// and the first byte it finds not plain,
// against its definition, byte by byte: every byte value at every place
// among plain and other bytes, and every pair of neighbours (a carry
// from one byte into the next must not hide either).
func TestPlainWord(t *testing.T) {
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

// TestPlainRun: plainRun stops at the first byte that is not plain, from
// any start, and tells whether a byte of 0x80 or above came before it
// (not after, in the same word), against a byte-by-byte reading: runs of
// every length up to three words and a tail, a high byte or none at each
// place, the stop at each place or none.
func TestPlainRun(t *testing.T) {
	for n := range 40 {
		for stop := -1; stop < n; stop++ {
			for hi := -1; hi < n; hi++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a' + byte(i%26)
				}
				if hi >= 0 {
					b[hi] = 0xe4
				}
				if stop >= 0 {
					b[stop] = "\"\\\n"[(stop+hi+3)%3]
				}
				for from := range n + 1 {
					want := from
					for want < n && plain(b[want]) {
						want++
					}
					wantHigh := hi >= from && hi < want
					got, high := plainRun(b, from)
					if got != want || high != wantHigh {
						t.Fatalf("plainRun(%q, %d) = %d, %v; want %d, %v", b, from, got, high, want, wantHigh)
					}
				}
			}
		}
	}
}
