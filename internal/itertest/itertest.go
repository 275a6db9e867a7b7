// Package itertest checks that an iterator honours Go's range-over-func
// contract: once the loop body returns false (the consumer breaks), the
// sequence must not yield again and must return. The Go runtime panics
// when a sequence yields after a break, so a check that breaks at every
// value finds a sequence that ignores yield's answer at any point.
package itertest

import (
	"iter"
	"testing"
)

// BreakAtEvery reads a sequence from newSeq to its end to count its
// values, then, for every k below that count, reads a fresh one and
// breaks after k+1 values; stopped, when not nil, is called after each
// broken loop has returned (to check that nothing happened after the
// break). The test fails if a sequence yields after the break (the
// runtime's panic) or yields fewer values than the break needed. It
// returns the count.
func BreakAtEvery[K, V any](t *testing.T, newSeq func(t *testing.T) iter.Seq2[K, V], stopped func(t *testing.T, k int)) int {
	t.Helper()
	n := 0
	for range newSeq(t) {
		n++
	}
	if n == 0 {
		t.Fatal("the sequence yields nothing: there is nowhere to break")
	}
	for k := range n {
		seen := 0
		for range newSeq(t) {
			seen++
			if seen == k+1 {
				break
			}
		}
		if seen != k+1 {
			t.Errorf("break after %d values: the sequence yielded only %d", k+1, seen)
		}
		if stopped != nil {
			stopped(t, k)
		}
	}
	return n
}

// BreakAtEvery1 is BreakAtEvery for an iter.Seq.
func BreakAtEvery1[V any](t *testing.T, newSeq func(t *testing.T) iter.Seq[V], stopped func(t *testing.T, k int)) int {
	t.Helper()
	return BreakAtEvery(t, func(t *testing.T) iter.Seq2[V, struct{}] {
		seq := newSeq(t)
		return func(yield func(V, struct{}) bool) {
			for v := range seq {
				if !yield(v, struct{}{}) {
					return
				}
			}
		}
	}, stopped)
}
