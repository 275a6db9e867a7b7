// Package transcript reads and writes session transcripts in Claude Code's
// JSONL format: one Entry a line, chained by uuid and parentUuid, appended
// and never rewritten.
//
// A Store keeps the files (FileStore on disk, MemStore in memory; the
// transcripttest package holds the conformance suite both pass). A Writer
// puts entries into a Store in order: user entries durably before the call
// returns, the rest through a short asynchronous buffer. Load rebuilds the
// conversation a resumed session continues from, reading only what the
// active chain needs (bytes before the last compact boundary are skipped).
// Sidechain lines (a subagent's, isSidechain) are not part of a session's
// conversation; a subagent's own transcript, which holds nothing else,
// loads as its conversation.
package transcript
