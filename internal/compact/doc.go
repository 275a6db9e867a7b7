// Package compact keeps a conversation inside its context window (SPEC §5),
// lightest layer first, and never leaves a session stuck:
//
//   - auto-compaction (C4): at the threshold (K3) the history is summarised
//     by the model in a request that shares the conversation's cache
//     prefix, and becomes compact boundary + summary + a preserved tail +
//     what must survive verbatim (the user's latest requests, pinned
//     messages, instruction files, recently read files), written as Claude
//     Code writes it so either program resumes the other's sessions;
//   - a request the model refuses as too long is compacted and sent again;
//     a summary request that would not fit is trimmed, then summarised in
//     chunks, and as a last resort the oldest history is dropped — every
//     path ends with a request that fits;
//   - a compaction must free a meaningful share of the window, and three
//     failures in a row stop auto-compaction for the session (it says so).
//
// The Manager plugs into the engine as its Prepare hook and is owned by the
// engine's goroutine.
package compact
