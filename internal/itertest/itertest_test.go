package itertest_test

import (
	"iter"
	"testing"

	"github.com/cairn-dev/cairn/internal/itertest"
)

func count(n int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := range n {
			if !yield(i, nil) {
				return
			}
		}
	}
}

func TestBreakAtEvery(t *testing.T) {
	var broken []int
	n := itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[int, error] { return count(3) },
		func(_ *testing.T, k int) { broken = append(broken, k) })
	if n != 3 || len(broken) != 3 {
		t.Errorf("counted %d values, broke %d times; want 3 and 3", n, len(broken))
	}
}

// TestBreakAtEveryCatches: a sequence that ignores yield's answer makes
// the runtime panic at the break.
func TestBreakAtEveryCatches(t *testing.T) {
	careless := func(yield func(int, error) bool) {
		yield(1, nil)
		yield(2, nil)
	}
	defer func() {
		if recover() == nil {
			t.Error("a sequence that yields after a break was not caught")
		}
	}()
	for range iter.Seq2[int, error](careless) {
		break
	}
}
