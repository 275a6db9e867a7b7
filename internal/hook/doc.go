// Package hook runs the hooks of Claude Code's settings files (SPEC G3):
// shell commands that the agent starts at points of its life —
// PreToolUse, PostToolUse, UserPromptSubmit, SessionStart, Stop,
// SubagentStart, SubagentStop, PreCompact, PostCompact — each given the event as JSON on stdin, whose
// exit code and output can block or amend what happens next. A team's
// Claude Code hooks work unchanged.
//
// [Load] combines the "hooks" object of every settings file (each file's
// hooks run; a later file does not replace an earlier one's). Matchers
// select hooks by tool name (PreToolUse, PostToolUse), source
// (SessionStart), agent type (SubagentStart, SubagentStop) or trigger
// (PreCompact, PostCompact): empty or "*"
// selects all, names made of letters, digits and _ joined by | are
// exact, anything else is a regular expression.
//
// A [Runner] runs the hooks that match, all at once, each with `sh -c` in
// the project folder, CLAUDE_PROJECT_DIR and CAIRN_PROJECT_DIR in its
// environment, and its own timeout (60 s unless set). The same command
// configured twice runs once. A hook that runs past its timeout is killed
// with every process it started; cancelling the context kills the hooks
// still running. A hook never makes the agent fail: what goes wrong is
// reported in the [Outcome] for the user.
//
// What a hook's answer means:
//
//   - Exit code 0: done. Plain stdout is context for the model for
//     UserPromptSubmit and SessionStart; a JSON object on stdout is read
//     as [Output] (continue, stopReason, systemMessage, decision, reason,
//     hookSpecificOutput). Stdout that is not a valid output object is
//     plain text.
//   - Exit code 2: a blocking answer whose stderr is the reason. It
//     refuses a tool call (PreToolUse), gives the model feedback on a
//     result (PostToolUse), refuses a prompt (UserPromptSubmit), keeps
//     the turn going (Stop) or the subagent at work (SubagentStop), or
//     cancels a compaction (PreCompact); for SessionStart, SubagentStart
//     and PostCompact it is only shown to the user.
//   - Any other exit code, a timeout, a hook that cannot start: reported
//     to the user; nothing is blocked.
//
// Each event has a typed entry point on Runner returning its outcome;
// the command line composes them with the permission checker and the
// engine's hook points (engine.Config.Gate, AfterTool, BeforePrompt,
// BeforeStop).
package hook
