package agent

import (
	"io"
	"iter"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/gcpace"
	"github.com/cairn-dev/cairn/transcript"
)

// loadHeap is how much of the heap a resume's load of src, size bytes,
// grows into is backed by huge pages (see load): what the load builds
// (transcript.HeapOf) and a quarter more for what the session's start
// builds on it (Grow stays under the memory limit, gcpace's while the
// load runs). At 100 MB, a quarter more took the first request from
// 0.258 to 0.235 s (8 alternating runs), at the same peak memory; half
// more was no faster.
func loadHeap(src io.ReaderAt, size int64) int {
	return int(transcript.HeapOf(src, size) * 5 / 4)
}

// refitAfter fits the collector again (gcpace.AfterTurn) once a turn's
// events end, however they end.
func refitAfter(events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		defer gcpace.AfterTurn()
		for ev, err := range events {
			if !yield(ev, err) {
				return
			}
		}
	}
}
