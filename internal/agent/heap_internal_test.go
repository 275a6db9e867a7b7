package agent

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestFitGC: with a large heap in use, the collector lets it grow by
// about heapHeadroom rather than double it; a GOGC the user set stays.
func TestFitGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	held := make([]byte, 4*heapHeadroom)
	for i := range held {
		held[i] = 1 // in use, not only reserved
	}
	fitGC(heapInUse)
	if p := debug.SetGCPercent(100); p < minGCPercent || p > 25 {
		t.Errorf("GC percent %d with %d MiB in use: want %d to 25", p, len(held)>>20, minGCPercent)
	}
	// Once the conversation is small again (a compaction), the default
	// is back.
	fitGC(heapInUse)
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	fitGC(heapLive)
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent %d once the heap is small again: want 100", p)
	}
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(50)
	fitGC(heapInUse)
	if p := debug.SetGCPercent(100); p != 50 {
		t.Errorf("GC percent %d with GOGC set: want it left as it was (50)", p)
	}
}

// TestLoadGC: while a resume loads, the collector runs at GOGC 200 under
// loadLimit; once it is done, the limit is gone and fitGC has set the
// percent. A GOGC or GOMEMLIMIT the user set leaves both alone, during
// the load as after it.
func TestLoadGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	runtime.GC() // what earlier tests left is not in use
	done := loadGC()
	if p, l := debug.SetGCPercent(200), debug.SetMemoryLimit(-1); p != 200 || l != loadLimit {
		t.Errorf("during the load: GC percent %d, limit %d; want 200 and %d", p, l, loadLimit)
	}
	done()
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 {
		t.Errorf("after the load of a small heap: GC percent %d, limit %d; want 100 and none", p, l)
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, "100")
			const userLimit = 1 << 30 // as the runtime set it from GOMEMLIMIT
			debug.SetGCPercent(50)
			debug.SetMemoryLimit(userLimit)
			done := loadGC()
			if p, l := debug.SetGCPercent(50), debug.SetMemoryLimit(-1); p != 50 || l != userLimit {
				t.Errorf("with %s set, during the load: GC percent %d, limit %d; want both left (50, %d)", k, p, l, userLimit)
			}
			runtime.GC() // what earlier tests left is not in use
			done()
			// fitGC keeps a GOGC the user set, and fits the percent
			// (to a small heap's default) under a GOMEMLIMIT.
			want := map[string]int{"GOGC": 50, "GOMEMLIMIT": 100}[k]
			if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != want || l != userLimit {
				t.Errorf("with %s set, after the load: GC percent %d, limit %d; want %d and the limit untouched", k, p, l, want)
			}
		})
	}
}

// TestLoadHeap: a load with fitGC backs the heap it builds with huge
// pages, as much as loadHeap says for the file's size, and leaves ending
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
	src.Close()
	defer func(g func(int) func()) { growHeap = g }(growHeap)
	for _, fit := range []bool{false, true} {
		var asked []int
		ended := 0
		growHeap = func(n int) func() {
			asked = append(asked, n)
			return func() { ended++ }
		}
		conv, grown, err := load(t.Context(), store, "s", nil, nil, nil, false, nil, fit, nil)
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
		case fit && (len(asked) != 1 || asked[0] != loadHeap(size) || ended != 1):
			t.Errorf("a load with fitGC of %d bytes grew the heap by %v, ended by grown %d times; want [%d], once", size, asked, ended, loadHeap(size))
		}
	}
}
