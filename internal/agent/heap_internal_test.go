package agent

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
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
