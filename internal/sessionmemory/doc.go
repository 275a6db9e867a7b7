// Package sessionmemory keeps a session's running notes (SPEC §6, seed 000
// §3.1, seed 003 §6): a markdown file with ten fixed sections that a
// forked agent brings up to date in the background while the
// conversation goes on, so that when the context fills up the notes are
// the summary and compaction makes no summary request.
//
//   - SM1: the notes live in the session's sidecar folder, where Claude
//     Code keeps them (<project>/<sessionId>/session-memory/summary.md),
//     start from a template with the sections Session Title, Current
//     State, Task specification, Files and Functions, Workflow, Errors &
//     Corrections, Codebase Documentation, Learnings, Key results and
//     Worklog, and are held to 2,000 tokens a section and 12,000 in all:
//     after each update an over-long section is cut, with a pointer to
//     the full text kept aside (summary.full.md).
//   - SM2: after each response of the main conversation (the engine's
//     AfterResponse hook) the Keeper decides whether the notes are due —
//     first at 10,000 tokens of context, then after 5,000 more and either
//     3 tool calls or a response that called none — and, if no update is
//     running, forks an agent in a goroutine. The fork sends the main
//     request's system prompt, tools and messages unchanged, so it reads
//     them from the prompt cache, plus an instruction at the tail; its
//     permission gate (Gate) lets it Read and Edit the notes file and
//     nothing else. The conversation never waits for it; a failure or a
//     timeout is reported through Warn and the conversation goes on.
//   - SM3: template.md and prompt.md in $CAIRN_HOME/session-memory/config/
//     (Claude Code's layout) or $CAIRN_HOME/session-memory/ replace the
//     defaults; the prompt's {{notesPath}}, {{currentNotes}},
//     {{maxSectionTokens}} and {{maxTotalTokens}} are filled in.
//   - SM4: Summary gives compaction the notes and the last message they
//     cover (package compact keeps what follows it), after waiting a
//     little for an update under way; notes still equal to the template
//     count as empty, and compaction then asks the model as usual.
//   - SM5: Extract updates the notes at once, whatever the thresholds
//     (/summary).
//
// The notes are only ever replaced whole (the Edit tool and this package
// both write a temporary file and rename it), so a crash never leaves a
// torn file; an update always starts from the file as it is on disk, so
// the user may edit it at any time.
package sessionmemory
