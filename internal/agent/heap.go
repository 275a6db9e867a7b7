package agent

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
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
// heapHeadroom in use, the collector now runs once the heap grew by
// heapHeadroom or a tenth, whichever is more: a few more collections
// while the garbage is made, none while the session waits. A GOGC the
// user set is left alone.
func fitGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if used := s[0].Value.Uint64(); used > heapHeadroom {
		debug.SetGCPercent(max(minGCPercent, int(100*heapHeadroom/used)))
	}
}
