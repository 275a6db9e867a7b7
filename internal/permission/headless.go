package permission

import (
	"fmt"
	"strings"
)

// hint is what would let a call that asks run without asking: the action
// in words, the rule to add, the mode to use.
type hint struct {
	action string     // "run `rm -rf build`"
	rule   string     // "Bash(rm -rf build)"
	mode   Mode       // "" when no mode short of bypass helps
	path   *PathCheck // the path constraint that decided, if one did
	fix    string     // what to do instead, when no rule or mode helps
}

// finish turns an ask into a deny when no one can answer (headless, or
// dontAsk mode), with a reason the model can act on.
func finish(req Request, d Decision, h hint) Decision {
	if d.Behavior != Ask || (!req.Headless && req.Mode != ModeDontAsk) {
		return d
	}
	why := "headless mode cannot ask"
	if req.Mode == ModeDontAsk {
		why = "dontAsk mode denies what is not allowed in advance"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Permission to %s was not granted: %s. %s", h.action, why, d.Reason)
	if !strings.HasSuffix(d.Reason, ".") {
		b.WriteString(".")
	}
	switch {
	case h.fix != "":
		b.WriteString(" " + h.fix)
	case h.rule != "" && h.mode != "":
		fmt.Fprintf(&b, " Add %s to permissions.allow in .cairn/settings.json or rerun with --permission-mode %s.", h.rule, h.mode)
	case h.rule != "":
		fmt.Fprintf(&b, " Add %s to permissions.allow in .cairn/settings.json, pass --allowedTools %q, or rerun with --permission-mode bypassPermissions (which allows everything no deny rule denies).", h.rule, h.rule)
	default:
		b.WriteString(" Add a rule to permissions.allow in .cairn/settings.json that allows it.")
	}
	return Decision{Behavior: Deny, Reason: b.String(), Rule: d.Rule}
}

// toolHint is the hint for a call of a tool other than Bash.
func toolHint(req Request, p place, c call) hint {
	h := hint{action: c.action, rule: req.Tool}
	switch c.kind {
	case kindEdit:
		if c.path != "" {
			h.rule = suggestPath("Edit", p, c.path)
			if p.inside(c.path) && !req.Destructive {
				h.mode = ModeAcceptEdits
			}
		}
	case kindRead:
		if c.path != "" {
			h.rule = suggestPath("Read", p, c.path)
		}
	case kindWeb:
		if c.host != "" && req.Tool == "WebFetch" {
			h.rule = "WebFetch(domain:" + c.host + ")"
		}
	}
	return h
}
