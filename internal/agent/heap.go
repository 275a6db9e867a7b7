package agent

import (
	"iter"
	"os"
	"runtime/debug"
	"runtime/metrics"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/transcript"
)

// heapHeadroom is how much garbage the collector lets pile up on top of a
// resumed session's conversation (or minGCPercent of what is in use, if
// more; see fitGC).
const heapHeadroom = 32 << 20

// minGCPercent is the least GC percent fitGC sets: past ten times
// heapHeadroom in use, the heap grows by a tenth between collections.
const minGCPercent = 10

// fitGC bounds how far the heap grows past what a resumed session holds
// once its transcript is loaded. By default (GOGC=100) the heap grows to
// twice what was live at the last collection before the next one: with a
// long session's conversation in memory (about its file's size), the
// compaction that follows the resume piled its garbage on top of it, and
// the process's peak memory was twice the conversation. With more than
// heapHeadroom in use (measured by metric), the collector now runs once
// the heap grew by heapHeadroom or a tenth, whichever is more: a few more
// collections while the garbage is made, none while the session waits.
// With less, it is back at the default: after each turn the session fits
// it again (see refitAfter), so a conversation a compaction made small
// does not keep the collector running every few megabytes. A GOGC the
// user set is left alone.
func fitGC(metric string) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	s := []metrics.Sample{{Name: metric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	percent := 100
	if used := s[0].Value.Uint64(); used > heapHeadroom {
		percent = max(minGCPercent, int(100*heapHeadroom/used))
	}
	debug.SetGCPercent(percent)
}

// loadGC sets the collector for a resume's load and returns what ends
// that setting, once the load is done, with fitGC. A load builds what
// stays: the entries and messages it decodes are most of what it
// allocates and all live at its end, so each collection while it runs
// marks again what the one before marked, and finds little to free; the
// heap grows to twice what was live at the last (GOGC 200) before the
// next, bounded by loadLimit. A GOGC or GOMEMLIMIT the user set is left
// alone.
func loadGC() func() {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	set := !gogc && !limit
	var before int64
	if set {
		debug.SetGCPercent(200)
		before = debug.SetMemoryLimit(loadLimit)
	}
	return func() {
		if set {
			debug.SetMemoryLimit(before)
		}
		fitGC(heapInUse)
	}
}

// loadLimit bounds the memory of the Go runtime while a resume loads, so
// that the collector's laxer pace costs a large file no more than a
// bounded amount: about 300 MB of resident memory with the program's own
// pages.
const loadLimit = 240 << 20

// loadHeap is how much of the heap a resume's load of size bytes grows
// into is backed by huge pages (see load): what the load builds and a
// quarter more for what the session's start builds on it (Grow stays
// under the memory limit, loadLimit while the load runs). At 100 MB, a
// quarter more took the first request from 0.258 to 0.235 s (8
// alternating runs), at the same peak memory; half more was no faster.
func loadHeap(size int64) int {
	return int(transcript.HeapOf(size) * 5 / 4)
}

// The metrics fitGC reads: right after a load, what the heap holds (the
// conversation was just made, no collection has weighed it yet); after a
// turn, what the last collection found live, not the garbage since.
const (
	heapInUse = "/memory/classes/heap/objects:bytes"
	heapLive  = "/gc/heap/live:bytes"
)

// refitAfter fits the collector again (fitGC) once a turn's events end,
// however they end.
func refitAfter(events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		defer fitGC(heapLive)
		for ev, err := range events {
			if !yield(ev, err) {
				return
			}
		}
	}
}
