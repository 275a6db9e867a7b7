package tools

import "github.com/cairn-dev/cairn/tool"

// Session is the state of one session that some tools work on. The
// session hands it to its tools once, when it starts (Bind), so it needs
// to know none of them by type or name: a tool that wants a piece of the
// session's state implements Bound and takes it.
type Session struct {
	// Todos is the session's todo list (TodoWrite).
	Todos *TodoList
	// Plan and PlanModes are the session's plan file and its way in and
	// out of plan mode (ExitPlanMode, EnterPlanMode).
	Plan      *Plan
	PlanModes PlanModes
	// Subagents runs the session's subagents (Task).
	Subagents Subagents
	// Skills loads the session's skills (Skill).
	Skills Skills
	// TrackShell wraps a tool that runs shell commands, so the session's
	// file history sees what the commands change (Bash); nil leaves it as
	// it is.
	TrackShell func(tool.Tool) tool.Tool
}

// Bound is a tool that works on its session's state: Bind returns the
// tool to offer in the session s. A tool must not keep s itself.
type Bound interface {
	tool.Tool
	Bind(s *Session) tool.Tool
}

// Bind returns ts with every Bound tool replaced by the tool it binds to
// s; the other tools are as they were.
func Bind(ts []tool.Tool, s *Session) []tool.Tool {
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		if b, ok := t.(Bound); ok {
			t = b.Bind(s)
		}
		out[i] = t
	}
	return out
}

// Bind implements Bound: the list is the session's.
func (TodoWrite) Bind(s *Session) tool.Tool { return TodoWrite{List: s.Todos} }

// Bind implements Bound: the plan and the plan mode are the session's.
func (ExitPlanMode) Bind(s *Session) tool.Tool { return ExitPlanMode{Plan: s.Plan, Modes: s.PlanModes} }

// Bind implements Bound: the plan mode is the session's.
func (EnterPlanMode) Bind(s *Session) tool.Tool { return EnterPlanMode{Modes: s.PlanModes} }

// Bind implements Bound: the subagents run as the session's.
func (t *Task) Bind(s *Session) tool.Tool { return t.With(s.Subagents) }

// Bind implements Bound: the skills are the session's.
func (Skill) Bind(s *Session) tool.Tool { return Skill{Skills: s.Skills} }

// Bind implements Bound: the session's file history tracks the commands.
func (b Bash) Bind(s *Session) tool.Tool {
	if s.TrackShell == nil {
		return b
	}
	return s.TrackShell(b)
}

// ForSubagent implements tool.SessionScoped: a subagent keeps a list of
// its own.
func (TodoWrite) ForSubagent() tool.Tool { return TodoWrite{List: NewTodoList(nil)} }

// ForSubagent implements tool.SessionScoped: the plan is the session's.
func (ExitPlanMode) ForSubagent() tool.Tool { return nil }

// ForSubagent implements tool.SessionScoped: the plan mode is the
// session's.
func (EnterPlanMode) ForSubagent() tool.Tool { return nil }

// ForSubagent implements tool.SessionScoped: a subagent starts no
// subagents.
func (*Task) ForSubagent() tool.Tool { return nil }

var (
	_ tool.SessionScoped = TodoWrite{}
	_ tool.SessionScoped = ExitPlanMode{}
	_ tool.SessionScoped = EnterPlanMode{}
	_ tool.SessionScoped = (*Task)(nil)
)

var (
	_ Bound = TodoWrite{}
	_ Bound = ExitPlanMode{}
	_ Bound = EnterPlanMode{}
	_ Bound = (*Task)(nil)
	_ Bound = Skill{}
	_ Bound = Bash{}
)
