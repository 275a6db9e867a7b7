package agent

import (
	"math"

	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/sessionmemory"
)

// The context's economics (issue 12). Every request reads the whole
// context again — a tenth of its size billed from the prompt cache — so
// a long session costs about its mean context size times its requests.
// Clearing old tool results keeps the context small but rewrites the
// cached prefix each time, and what the results held is gone unless the
// notes took it down first. So the session keeps its notes in batches,
// one update shortly before each compaction, and compacts to the notes
// (no summary request) well before the auto-compaction threshold, with
// no clearing in between. The shares below come from the sweep in
// bench/ (README, "Context economics").
const (
	// earlyShare is where the early compaction happens, in percent of the
	// auto-compaction threshold.
	earlyShare = 20
	// notesLead is where the notes are brought up to date, in percent of
	// the early compaction's size: what they do not cover yet is kept
	// verbatim, so the lead bounds the tail a compaction keeps.
	notesLead = 80
	// minEarly is the smallest early threshold: in a smaller window
	// (under about 100,000 tokens) the context is cheap to read anyway,
	// and a compaction every few steps would leave the model little.
	minEarly = 20_000
)

// earlyCompactAt is the context size of the early compaction from the
// notes, or 0 when there is none (no notes, no auto-compaction, turned
// off).
// Context collapse, when on, is the user's choice of how the context
// stays small: there is no early compaction then.
func earlyCompactAt(o Options) int64 {
	if o.EarlyCompactAt < 0 || o.DisableSessionMemory || o.DisableAutoCompact || o.Collapse != nil {
		return 0
	}
	if o.EarlyCompactAt > 0 {
		return o.EarlyCompactAt
	}
	if at := o.Window.AutoCompactAt() * earlyShare / 100; at >= minEarly {
		return at
	}
	return 0
}

// notesThresholds are the notes' thresholds with an early compaction at
// early tokens: one update at notesLead percent of it, unless the caller
// chose thresholds of its own.
func notesThresholds(th sessionmemory.Thresholds, early int64) sessionmemory.Thresholds {
	if early > 0 && th == (sessionmemory.Thresholds{}) {
		th.At = early * notesLead / 100
	}
	return th
}

// microFor is micro-compaction's configuration with an early compaction:
// no clearing by count (the compaction keeps the context small, and
// clearing would drop results the notes have not taken down), only when
// the prompt cache has gone cold anyway.
func microFor(c compact.MicroConfig, early int64) compact.MicroConfig {
	if early > 0 && c.Count == 0 {
		c.Count = math.MaxInt32
	}
	return c
}
