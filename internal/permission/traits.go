package permission

import (
	"encoding/json"

	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// Traits returns the safety answers of cairn's built-in tools for an
// input, for callers that have no tool.Tool at hand (`cairn permissions
// check`). The agent passes its tools' own answers to Check instead; for
// Bash both come from shellsafe, so both decide alike.
func Traits(tool string, input json.RawMessage, cwd string) (readOnly, destructive bool) {
	switch tool {
	case "Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoRead", "TodoWrite", "Snip":
		return true, false
	case "Bash":
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(input, &in) != nil {
			return false, false
		}
		c := shellsafe.Parse(in.Command).Classify(shellsafe.Options{Dir: cwd})
		return c.ReadOnly, c.Destructive
	}
	return false, false
}
