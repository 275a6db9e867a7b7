package agent

import "github.com/cairn-dev/cairn/tool"

// Tools are the session's tools, which say how their calls are shown and
// what files they touch.
func (a *Agent) Tools() *tool.Registry { return a.tools }
