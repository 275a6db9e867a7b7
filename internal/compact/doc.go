// Package compact keeps a conversation inside its context window (SPEC §5),
// lightest layer first, and never leaves a session stuck:
//
//   - large tool results (C0, Offload): a result over its tool's limit is
//     saved under the session's tool-results folder and the model reads a
//     preview naming the file, in Claude Code's <persisted-output> form;
//     one response's results together stay under a budget;
//   - snip (C1, Snip): every user message sent ends with a tag
//     [id:xxxxxx] made from its uuid; the Snip tool lets the model remove
//     the messages it names (a tool call with its result), refusing what
//     must stay (the latest request, the current turn, todos, plans,
//     permission decisions, instructions, summaries, pins); a
//     snip_boundary line records it and a resume applies it; near the
//     threshold a reminder says the model can snip. Pins (Pins) are
//     recorded in the transcript and carried through every compaction;
//   - micro-compaction (C2, Micro): old results of tools whose output can
//     be had again are cleared in batches — when the prompt cache is cold
//     anyway, or when enough of them piled up — and stay cleared in every
//     later request and after a resume (microcompact_boundary lines); with
//     Anthropic's API a warm cache's prefix is left alone and the server
//     is asked to clear instead;
//   - context collapse (C3, Collapse): older spans of the conversation —
//     a prompt and the work that answered it, never a tool call without
//     its result — are sent folded into short summaries while the history
//     and the transcript keep every message; the model writes the
//     summaries in the background (in a request that shares the
//     conversation's cache prefix, or with the small model) from 80% of
//     the auto-compaction threshold, they are committed together from
//     90%, and from 95% of the effective window (at the latest at the
//     threshold) the request waits for them or folds at once; each commit
//     is a context_collapse_commit line, so a resume sends the same folds;
//     the newest messages, the user's latest prompts, instructions, todos,
//     plans, permission decisions, pins and what compaction wrote are
//     never folded. It is off unless configured; when it cannot free
//     enough, auto-compaction runs as it would without it;
//   - auto-compaction (C4): at the threshold (K3) the history is summarised
//     by the model in a request that shares the conversation's cache
//     prefix, and becomes compact boundary + summary + a preserved tail +
//     what must survive verbatim (the user's latest requests, pinned
//     messages, instruction files, recently read files), written as Claude
//     Code writes it so either program resumes the other's sessions;
//     when the session's notes (Notes, SPEC SM4) hold something they are
//     the summary instead, and no summary request is made;
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
