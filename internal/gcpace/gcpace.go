// Package gcpace sets the Go collector's pace around a load of a long
// transcript, for the whole process: laxer while the load builds what
// stays (Load), then bounded to a little over what the program holds
// (AfterLoad, AfterTurn), so that the garbage made on top of a long
// conversation does not double the process's memory. It is for a program
// that is the loader's user alone, as cairn's command line is, not one
// that embeds it beside work of its own. A GOGC or GOMEMLIMIT the user
// set is left alone.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// headroom is how much garbage the collector lets pile up on top of what
// the program holds (or minPercent of it, if more; see fit).
const headroom = 32 << 20

// minPercent is the least GC percent fit sets: past ten times headroom
// in use, the heap grows by a tenth between collections.
const minPercent = 10

// loadLimit bounds the memory of the Go runtime while a load runs (see
// Load), so that the collector's laxer pace costs a large file no more
// than a bounded amount: about 300 MB of resident memory with the
// program's own pages.
const loadLimit = 240 << 20

// The metrics fit reads: right after a load, what the heap holds (the
// conversation was just made, no collection has weighed it yet); after a
// turn, what the last collection found live, not the garbage since.
const (
	heapInUse = "/memory/classes/heap/objects:bytes"
	heapLive  = "/gc/heap/live:bytes"
)

// fit bounds how far the heap grows past what the program holds. By
// default (GOGC=100) the heap grows to twice what was live at the last
// collection before the next one: with a long conversation in memory
// (about its file's size), what is made on top of it (a compaction's
// garbage, a transcript printed) piled up as high, and the process's
// peak memory was twice the conversation. With more than headroom in use
// (as metric measures it), the collector runs once the heap grew by
// headroom or a tenth, whichever is more: a few more collections while
// garbage is made, none while the program waits. With less, it is back
// at the default, so a conversation a compaction made small does not
// keep the collector running every few megabytes.
func fit(metric string) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	s := []metrics.Sample{{Name: metric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	percent := 100
	if used := s[0].Value.Uint64(); used > headroom {
		percent = max(minPercent, int(100*headroom/used))
	}
	debug.SetGCPercent(percent)
}

// AfterLoad fits the collector to what a load just built (see fit).
func AfterLoad() { fit(heapInUse) }

// AfterTurn fits the collector again to what the last collection found
// live: after a session's turn, which may have made its conversation
// small (a compaction) or larger.
func AfterTurn() { fit(heapLive) }

// Load sets the collector for a load and returns what ends that setting,
// once the load is done, with AfterLoad. A load builds what stays: the
// entries and messages it decodes are most of what it allocates and all
// live at its end, so a collection while it runs marks what the load
// just made, finds little to free, and takes a core from the load. The
// collector is off while it runs (GOGC off) and only loadLimit calls for
// it: a load that builds less than that (a 100 MB transcript, mapped,
// about 60 MB) runs with no collection, one that builds more is
// collected when it reaches the limit, and one that holds nearly as much
// live goes on at a GC percent instead (see watch). Measured beside
// GOGC 200 under the same limit (cairn-bench firstreq -against, -pages
// dropped, the median of the rounds' ratios): the resume to its first
// request takes 0.91× the time at 100 MB (n=41, 0.94× of the peak
// memory), 0.93× at 400 MB (n=9, the same peak), and the same at 10 MB
// (n=41).
func Load() (done func()) {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if gogc || limit {
		return AfterLoad
	}
	return load(loadLimit).done
}

// load is Load under the given memory limit.
func load(limit int64) *pace {
	// Past three quarters of the limit live, the limit would have the
	// collector run again as soon as it is done (see watch).
	p := &pace{past: uint64(limit / 4 * 3)}
	debug.SetGCPercent(-1)
	p.before = debug.SetMemoryLimit(limit)
	p.watch()
	return p
}

// overLimitPercent is the GC percent for the rest of a load whose live
// heap is past three quarters of the limit: a collection each time the
// heap grew by a quarter of what it holds, a few for a load that doubles
// its heap rather than one after another.
const overLimitPercent = 25

// pace is a load's setting of the collector (see Load).
type pace struct {
	past   uint64 // the live heap past which the limit makes way (see watch)
	mu     sync.Mutex
	before int64 // the memory limit before the load
	ended  bool
	over   bool // a collection found more than past live (see watch)
	looked int  // how many times watch looked at the heap (for tests)
}

// watch looks at the heap after the collections while the load runs (on
// the runtime's cleanup goroutine, soon after each; one that starts
// while the collector marks waits for the collection after it): once
// what is live is past p.past, the limit would keep the collector
// running back to back (a 1 GB transcript's load with no compaction in
// it holds about 400 MB), so the load goes on with no limit and the
// collector at overLimitPercent. Measured at 1 GB (cairn-bench firstreq
// -against, n=3): 5.8 → 3.3 s to the first request, at the same peak
// (493 against 505 MB; 12 collections during the load, now 4); a load
// that stays under it (400 MB and less) is as it was. hugeheap.Grow puts
// back the percent it found when it is done: a switch while it runs
// would be undone, which a resume avoids by growing the heap before its
// load builds anything.
func (p *pace) watch() {
	// A cleanup runs after the collection that found its object
	// unreachable; a new one is made for the next. The object is 16
	// bytes: a smaller one without pointers could share a block with
	// others (the tiny allocator), which keeps it, and its cleanup, for
	// as long as they live.
	runtime.AddCleanup(new([16]byte), func(p *pace) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ended || p.over {
			return
		}
		p.looked++
		s := []metrics.Sample{{Name: heapLive}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > p.past {
			p.over = true
			debug.SetMemoryLimit(p.before)
			debug.SetGCPercent(overLimitPercent)
			return
		}
		p.watch()
	}, p)
}

// done ends the load's setting: the limit is what it was before, and the
// collector fitted to what the load built.
func (p *pace) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	debug.SetMemoryLimit(p.before)
	AfterLoad()
}
