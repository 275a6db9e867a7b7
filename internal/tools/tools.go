// Package tools provides cairn's core tools — Bash, Glob, Grep, Read, Edit
// and Write — with the inputs, the text the model reads and the
// toolUseResult records of Claude Code's tools of the same names, so a
// transcript written by either program reads the same (SPEC G1, T5).
//
// Each tool is a small value type implementing tool.Tool; its zero value is
// ready to use and safe for concurrent use. The tools keep no state of
// their own: the working directory and what the model has read live in the
// tool.Env of the call. Read records every file it shows in env.Files, and
// Write and Edit refuse to change a file the model has not read or that
// changed on disk since (SPEC F5); both call env.BeforeChange before
// writing, so file history can back the file up (SPEC F1), and write
// atomically.
//
// A refused call (bad input, stale file, no match) is a Result with
// IsError whose text is wrapped in <tool_use_error> tags, as Claude Code
// does; a command's non-zero exit is an error Result too. A returned error
// means the tool itself failed or ctx was cancelled. Results are not
// spilled to files here: large results are the compaction layer's job
// (SPEC C0), though Bash and Grep cap their own output.
package tools

import "github.com/cairn-dev/cairn/tool"

// Core returns the core tools in the order Claude Code lists them.
func Core() []tool.Tool {
	return []tool.Tool{Bash{}, Glob{}, Grep{}, Read{}, Edit{}, Write{}}
}
