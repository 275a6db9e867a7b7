package permission

import "strings"

// Record is how a permission decision is kept in the transcript: the
// tool-result line of the call carries it under "permissionDecision", so a
// resumed session, compaction and people reading the log all see what was
// decided and why (SPEC G2: decisions are recorded).
//
//	"permissionDecision": {
//	  "decision": "allow" | "deny",  // what happened to the call
//	  "by": "rule" | "mode" | "user" | "headless",
//	  "rule": "Bash(npm test:*)",    // the deciding rule, when one did
//	  "reason": "Allowed by the rule Bash(npm test:*) in …",
//	  "mode": "default"              // the permission mode at the time
//	}
//
// An "ask" never reaches the transcript as such: the person's answer is
// recorded with "by": "user", or the headless deny with "by": "headless".
type Record struct {
	Decision Behavior `json:"decision"`
	By       string   `json:"by"`
	Rule     string   `json:"rule,omitempty"`
	Reason   string   `json:"reason"`
	Mode     Mode     `json:"mode"`
}

// Record returns the transcript record of a decision made in mode.
func (d Decision) Record(mode Mode) Record {
	r := Record{Decision: d.Behavior, Rule: d.Rule, Reason: d.Reason, Mode: mode, By: "mode"}
	switch {
	case d.Behavior == Deny && strings.Contains(d.Reason, "was not granted: "):
		r.By = "headless" // an ask turned into a deny by finish
	case d.Rule != "":
		r.By = "rule"
	}
	return r
}

// Answered returns the record of an ask that a person answered.
func (d Decision) Answered(mode Mode, allowed bool) Record {
	r := Record{Decision: Deny, By: "user", Rule: d.Rule, Reason: d.Reason, Mode: mode}
	if allowed {
		r.Decision = Allow
	}
	return r
}
