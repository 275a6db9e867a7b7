package hook

import (
	"encoding/json"
	"strings"
)

// Output is the JSON a hook may print on stdout (exit code 0) instead of
// plain text, in Claude Code's shape. Every field is optional.
type Output struct {
	// Continue, when false, stops the agent after this event; StopReason
	// tells the user why (the model does not see it).
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SuppressOutput hides the hook's stdout from the user.
	SuppressOutput bool `json:"suppressOutput,omitempty"`
	// SystemMessage is shown to the user.
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision "block" (with Reason) blocks what the event allows
	// blocking. For PreToolUse, "approve" and "block" are the older
	// spellings of permissionDecision allow and deny.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Specific holds the fields of one event.
	Specific *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is the "hookSpecificOutput" object of a hook's JSON output.
type Specific struct {
	// HookEventName names the event the fields are for; fields for
	// another event than the one that ran are ignored.
	HookEventName string `json:"hookEventName,omitempty"`
	// PreToolUse: allow, deny or ask, and why.
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	// PreToolUse: the input the call runs with instead of the model's.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// Context added for the model (UserPromptSubmit, SessionStart,
	// PreToolUse, PostToolUse; SubagentStart: for the subagent).
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// parseOutput decodes stdout when it is a JSON object of the hook output
// shape; anything else (plain text, a JSON array, an object with fields
// of the wrong type) is plain text and yields nil.
func parseOutput(stdout string) *Output {
	s := strings.TrimSpace(stdout)
	if !strings.HasPrefix(s, "{") {
		return nil
	}
	var o Output
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil
	}
	if o.Specific != nil && isNull(o.Specific.UpdatedInput) {
		o.Specific.UpdatedInput = nil
	}
	return &o
}
