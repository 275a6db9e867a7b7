package tool

import "encoding/json"

// What the rest of cairn needs to know about a tool beyond Tool — which
// files a call touches, whether its result may be cleared, how a call is
// shown — the tool says itself, through the optional interfaces below,
// as an io.Reader says it can write itself out by being an io.WriterTo.
// Permissions, compaction, instruction files and the terminal UI ask the
// tool (through TouchedPaths, IsReobtainable and Summary, which look
// through wrappers) instead of keeping tables of tool names, so a new
// tool that edits files needs no change outside its own file.

// PathUse is one path a call reads or writes.
type PathUse struct {
	// Path is as the input names it: absolute, or relative to the
	// working directory ("." for the working directory itself).
	Path string
	// Write is set when the call creates, changes or deletes what is at
	// Path; otherwise it only reads it.
	Write bool
	// Folder is set when Path is a folder the call looks through (a
	// search) rather than a file it works on.
	Folder bool
}

// PathToucher is implemented by a tool whose calls read or write files
// named in their input. TouchedPaths returns those paths for an input,
// in the order the input names them, or nil when the input names none or
// does not parse. A call that writes a path is an edit for permissions
// (Edit(…) rules cover it, acceptEdits allows it inside the project); one
// that only reads is a read (Read(…) rules). The files (not folders) it
// touches bring in the instruction files of their folders. It must be fast and safe for
// concurrent use, and must not touch the files.
type PathToucher interface {
	TouchedPaths(input json.RawMessage) []PathUse
}

// Reobtainable is implemented by a tool whose results can be obtained
// again by calling it again (reading a file, searching, fetching, running
// a command): an old result of such a tool may be cleared from the
// context to make room (micro-compaction), the call staying in place.
// A tool whose result is the only record of something (a subagent's
// report, a plan the person approved) is not Reobtainable.
type Reobtainable interface {
	Reobtainable() bool
}

// Summarizer is implemented by a tool that says in a few words what a
// call is about — the command, the file, the pattern — for a one-line
// view of the call. rel shortens a path the way the viewer shows paths
// (relative to its working directory); Summary passes every path it
// shows through it. "" leaves the viewer to choose.
type Summarizer interface {
	Summary(input json.RawMessage, rel func(path string) string) string
}

// ResultLimiter is implemented by a tool whose results have a size limit
// of their own: ResultLimit is the most characters of a result kept in the
// context, the whole result being saved to a file the model can read
// (SPEC C0); 0 keeps the session's default, negative never saves one (a
// tool that bounds its own output, or that is how saved results are read
// back).
type ResultLimiter interface {
	ResultLimit() int
}

// Wrapper is implemented by a tool that wraps another one (to watch or
// change its calls): Unwrap returns the wrapped tool, so that the
// optional interfaces of the tool inside are found through the wrapper,
// as errors.Unwrap does for errors.
type Wrapper interface {
	Unwrap() Tool
}

// find returns the first of t and the tools it wraps that is an I.
func find[I any](t Tool) (I, bool) {
	for t != nil {
		if i, ok := t.(I); ok {
			return i, true
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	var zero I
	return zero, false
}

// TouchedPaths returns the paths a call of t with input reads or writes
// (PathToucher), looking through wrappers; nil when t touches no files
// by path.
func TouchedPaths(t Tool, input json.RawMessage) []PathUse {
	if p, ok := find[PathToucher](t); ok {
		return p.TouchedPaths(input)
	}
	return nil
}

// Writes reports whether a call of t with input writes a path.
func Writes(t Tool, input json.RawMessage) bool {
	for _, p := range TouchedPaths(t, input) {
		if p.Write {
			return true
		}
	}
	return false
}

// IsReobtainable reports whether t's results can be obtained again
// (Reobtainable), looking through wrappers.
func IsReobtainable(t Tool) bool {
	r, ok := find[Reobtainable](t)
	return ok && r.Reobtainable()
}

// ResultLimit is t's own result limit (ResultLimiter), looking through
// wrappers; ok is false when t has none.
func ResultLimit(t Tool) (limit int, ok bool) {
	if r, found := find[ResultLimiter](t); found && r.ResultLimit() != 0 {
		return r.ResultLimit(), true
	}
	return 0, false
}

// Summary is what a call of t with input is about in a few words
// (Summarizer), looking through wrappers; "" when t does not say.
func Summary(t Tool, input json.RawMessage, rel func(string) string) string {
	if rel == nil {
		rel = func(p string) string { return p }
	}
	if s, ok := find[Summarizer](t); ok {
		return s.Summary(input, rel)
	}
	return ""
}

// SessionScoped is implemented by a tool that works on its session's own
// state (its plan, its to-do list, its context, its subagents), which a
// subagent of the session must not share. ForSubagent returns what a
// subagent is given in the tool's place: a tool with state of its own (a
// to-do list of the subagent's), or nil when a subagent must not have the
// tool at all (the plan-mode tools; the tool that starts subagents, so
// that a subagent cannot start one). It must be safe for concurrent use;
// every call may return a new tool.
type SessionScoped interface {
	ForSubagent() Tool
}

// ForSubagent returns what a subagent is given in t's place
// (SessionScoped), looking through wrappers: t itself when neither t nor
// a tool it wraps is SessionScoped; nil when the subagent must not have
// it. A wrapped tool's replacement is given without the wrapper.
func ForSubagent(t Tool) Tool {
	if s, ok := find[SessionScoped](t); ok {
		return s.ForSubagent()
	}
	return t
}
