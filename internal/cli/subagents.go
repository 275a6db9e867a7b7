package cli

import (
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// withTask puts the Task tool first among ts, as Claude Code lists it,
// offering the built-in agent and the custom agents of the user
// ($CAIRN_HOME/agents) and of the project at cwd (.claude/agents,
// .cairn/agents). It returns warnings about agent files it skipped.
func withTask(ts []tool.Tool, home session.Home, cwd string) ([]tool.Tool, []string) {
	defs, warnings := subagent.Load(subagent.Dirs(home.Dir, cwd)...)
	return append([]tool.Tool{tools.NewTask(defs)}, ts...), warnings
}
