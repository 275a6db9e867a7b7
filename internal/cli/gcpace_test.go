package cli_test

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestReadersPaceTheCollector: sessions show, sessions export and context
// ID load the transcript at gcpace's pace and then fit the collector to
// what the heap holds, leaving no memory limit behind. Printing a long
// conversation then does not pile its garbage as high as the
// conversation (400 MB: 333–346 MB → 227–255 MB peak).
func TestReadersPaceTheCollector(t *testing.T) {
	p := newProject(t)
	if code, _, errOut := p.run(t, "", "-p", "hi"); code != 0 {
		t.Fatalf("cairn -p hi: exit %d: %s", code, errOut)
	}
	ids := p.sessionIDs(t)
	if len(ids) != 1 {
		t.Fatalf("%d sessions, want 1", len(ids))
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, args := range [][]string{
		{"sessions", "show", ids[0]},
		{"sessions", "show", ids[0], "--json"},
		{"sessions", "export", ids[0]},
		{"context", ids[0]},
	} {
		debug.SetGCPercent(300) // no percent the fitting sets
		debug.SetMemoryLimit(math.MaxInt64)
		if code, _, errOut := p.run(t, "", args...); code != 0 {
			t.Fatalf("cairn %q: exit %d: %s", args, code, errOut)
		}
		// The test process's own heap decides the percent (100 for a small
		// one, down to 10 for a larger one).
		if pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); pct < 10 || pct > 100 || limit != math.MaxInt64 {
			t.Errorf("after cairn %q: GC percent %d, memory limit %d; want the percent fitted to the heap (10 to 100) and no limit", args, pct, limit)
		}
	}
}
