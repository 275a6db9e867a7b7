// Package tools provides cairn's core tools — Bash, Glob, Grep, Read,
// Edit, MultiEdit, Write, WebFetch, TodoWrite, the plan-mode tools
// ExitPlanMode and EnterPlanMode, and Task — with the inputs, the
// text the model reads and the toolUseResult records of Claude Code's
// tools of the same names, so a transcript written by either program reads
// the same (SPEC G1, T5).
//
// Each tool is a small value type implementing tool.Tool, safe for
// concurrent use; its zero value is ready to use, except TodoWrite's,
// which needs the session's TodoList, the plan-mode tools', which
// need the session's Plan and PlanModes, and Task, which NewTask makes
// and which runs its subagents through the session's Subagents. The file tools keep no state of
// their own: the working directory and what the model has read live in
// the tool.Env of the call. Read records every file it shows in env.Files,
// and Write, Edit and MultiEdit refuse to change a file the model has not
// read or that changed on disk since (SPEC F5); they call env.BeforeChange
// before writing, so file history can back the file up (SPEC F1), and
// write atomically. The todo list and the plan are the pieces of session
// state tools hold (SPEC R4, E3): see TodoList and Plan.
//
// A refused call (bad input, stale file, no match) is a Result with
// IsError whose text is wrapped in <tool_use_error> tags, as Claude Code
// does; a command's non-zero exit is an error Result too. A returned error
// means the tool itself failed or ctx was cancelled. Results are not
// spilled to files here: large results are the compaction layer's job
// (SPEC C0), though Bash and Grep cap their own output.
package tools

import "github.com/cairn-dev/cairn/tool"

// Core returns the core tools in the order Claude Code lists them. Its
// TodoWrite has a new, empty list; a session that keeps the list across
// compaction and resume gives TodoWrite its own. Its plan-mode tools
// refuse to run until a session gives them its Plan and PlanModes.
func Core() []tool.Tool {
	return []tool.Tool{Bash{}, Glob{}, Grep{}, ExitPlanMode{}, Read{}, Edit{}, MultiEdit{}, Write{}, WebFetch{}, TodoWrite{List: NewTodoList(nil)}, EnterPlanMode{}}
}

// The tools say what the rest of cairn needs to know of them through
// tool's optional interfaces.
var (
	_ tool.PathToucher  = Read{}
	_ tool.PathToucher  = Write{}
	_ tool.PathToucher  = Edit{}
	_ tool.PathToucher  = MultiEdit{}
	_ tool.PathToucher  = Grep{}
	_ tool.PathToucher  = Glob{}
	_ tool.Reobtainable = Bash{}
	_ tool.Summarizer   = WebFetch{}
)
