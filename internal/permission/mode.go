package permission

import (
	"fmt"
	"strings"
)

// Mode is how calls that no rule decides are treated.
type Mode string

const (
	// ModeDefault allows read-only tools inside the project and asks for
	// everything else.
	ModeDefault Mode = "default"
	// ModeAcceptEdits also allows file edits inside the project and the
	// additional directories; Bash is still decided by rules.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModePlan allows only read-only tools; anything else is denied until
	// the plan is approved.
	ModePlan Mode = "plan"
	// ModeBypass allows everything that no deny rule denies.
	ModeBypass Mode = "bypassPermissions"
	// ModeDontAsk is Claude Code's mode that never asks: what would ask is
	// denied, in the terminal UI too.
	ModeDontAsk Mode = "dontAsk"
)

// Modes lists the modes --permission-mode accepts.
var Modes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass, ModeDontAsk}

// ParseMode returns the mode named s; "" is ModeDefault.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeDefault, nil
	case ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass, ModeDontAsk:
		return m, nil
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown permission mode %q; use one of %s", s, strings.Join(names, ", "))
}
