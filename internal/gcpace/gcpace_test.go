package gcpace

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestFit: with a large heap in use, the collector lets it grow by
// about headroom rather than double it; a GOGC the user set stays.
func TestFit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")
	held := make([]byte, 4*headroom)
	for i := range held {
		held[i] = 1 // in use, not only reserved
	}
	AfterLoad()
	if p := debug.SetGCPercent(100); p < minPercent || p > 25 {
		t.Errorf("GC percent %d with %d MiB in use: want %d to 25", p, len(held)>>20, minPercent)
	}
	// Once the conversation is small again (a compaction), the default
	// is back.
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	AfterTurn()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent %d once the heap is small again: want 100", p)
	}
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(50)
	AfterLoad()
	if p := debug.SetGCPercent(100); p != 50 {
		t.Errorf("GC percent %d with GOGC set: want it left as it was (50)", p)
	}
}

// TestLoad: while a load runs, the collector is off but for loadLimit;
// once it is done, the limit is gone and AfterLoad has set the percent.
// A GOGC or GOMEMLIMIT the user set leaves both alone, during the load as
// after it.
func TestLoad(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	runtime.GC() // what earlier tests left is not in use
	done := Load()
	if p, l := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1); p != -1 || l != loadLimit {
		t.Errorf("during the load: GC percent %d, limit %d; want -1 (off) and %d", p, l, loadLimit)
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
			done := Load()
			if p, l := debug.SetGCPercent(50), debug.SetMemoryLimit(-1); p != 50 || l != userLimit {
				t.Errorf("with %s set, during the load: GC percent %d, limit %d; want both left (50, %d)", k, p, l, userLimit)
			}
			runtime.GC() // what earlier tests left is not in use
			done()
			// AfterLoad keeps a GOGC the user set, and fits the percent
			// (to a small heap's default) under a GOMEMLIMIT.
			want := map[string]int{"GOGC": 50, "GOMEMLIMIT": 100}[k]
			if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != want || l != userLimit {
				t.Errorf("with %s set, after the load: GC percent %d, limit %d; want %d and the limit untouched", k, p, l, want)
			}
		})
	}
}

// TestLoadPastTheLimit: once a collection during the load finds more than
// three quarters of the limit live, the limit makes way for a GC percent
// (the limit would have the collector run back to back); a load that
// stays under it keeps the limit after the watch looked; and the end of
// the load is final: a collection after it changes nothing the end set.
func TestLoadPastTheLimit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const limit = 64 << 20
	// percent reads the GC percent without setting it: set and put back,
	// it could undo a switch the watch made in between.
	percent := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	// until collects (the watch runs after a collection, on the cleanup
	// goroutine) until ok, for at most 10 s.
	until := func(ok func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !ok() && time.Now().Before(deadline); {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	looked := func(p *pace) int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.looked
	}

	runtime.GC() // what earlier tests left is not in use
	p := load(limit)
	until(func() bool { return looked(p) >= 2 })
	if n, pct, l := looked(p), percent(), debug.SetMemoryLimit(-1); n < 2 || pct != -1 || l != limit {
		t.Errorf("a small heap during the load, the watch looked %d times: GC percent %d, limit %d; want off and %d", n, pct, l, limit)
	}
	held := make([]byte, limit/4*3+(4<<20)) // live past three quarters
	for i := range held {
		held[i] = 1
	}
	until(func() bool { return percent() == overLimitPercent })
	if pct, l := percent(), debug.SetMemoryLimit(-1); pct != overLimitPercent || l != math.MaxInt64 {
		t.Errorf("%d MiB live under a %d MiB limit: GC percent %d, limit %d; want %d and no limit", len(held)>>20, limit>>20, pct, l, overLimitPercent)
	}
	p.done()
	after := percent()
	AfterLoad() // on the same heap: what the end should have set
	if fitted := debug.SetGCPercent(after); after != fitted || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("after the load: GC percent %d; want it fitted to the heap (%d) and no limit", after, fitted)
	}
	runtime.KeepAlive(held)

	// Ended before a collection found the heap past the limit: nothing
	// changes after the end, however many collections follow.
	p = load(limit)
	p.done()
	ended := percent()
	held = make([]byte, limit)
	for i := range held {
		held[i] = 1
	}
	for range 5 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
	}
	if pct, l, n := debug.SetGCPercent(ended), debug.SetMemoryLimit(-1), looked(p); pct != ended || l != math.MaxInt64 || n != 0 {
		t.Errorf("collections after the end: GC percent %d, limit %d, the watch looked %d times; want %d, no limit, none", pct, l, n, ended)
	}
	runtime.KeepAlive(held)
}
