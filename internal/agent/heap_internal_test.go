package agent

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestLoadHeap: a load with fitGC backs the heap it builds with huge
// pages, as much as loadHeap says for the file, and leaves ending
// that to its caller; one without asks for none.
func TestLoadHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	store := transcript.NewMemStore()
	w, err := store.OpenAppender(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(t.Context(), transcripttest.Entries("s", 3), true); err != nil {
		t.Fatal(err)
	}
	w.Close()
	src, err := store.OpenSource(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	size := src.Size()
	want := loadHeap(src, size)
	src.Close()
	defer func(g func(int) func()) { growHeap = g }(growHeap)
	for _, fit := range []bool{false, true} {
		var asked []int
		ended := 0
		growHeap = func(n int) func() {
			asked = append(asked, n)
			return func() { ended++ }
		}
		conv, grown, err := load(t.Context(), store, "s", transcript.LoadOptions{}, loadHow{fitGC: fit})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(conv.FromFile()); n != 3 {
			t.Fatalf("load: %d entries, want 3", n)
		}
		if ended != 0 {
			t.Errorf("load with fitGC %v ended the huge pages itself", fit)
		}
		grown()
		switch {
		case !fit && len(asked) != 0:
			t.Errorf("a load without fitGC grew the heap: %v", asked)
		case fit && (len(asked) != 1 || asked[0] != want || ended != 1):
			t.Errorf("a load with fitGC of %d bytes grew the heap by %v, ended by grown %d times; want [%d], once", size, asked, ended, want)
		}
	}
}
