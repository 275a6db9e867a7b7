package hook

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPreToolUseFaults: a hook that exits with an unexpected code, or
// prints junk, neither blocks the call nor stalls it; what went wrong is
// reported with the hook's name.
func TestPreToolUseFaults(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		deny    bool
		message string // a part of the one message; "" for none
	}{
		{"exit 3", "echo 'policy server down' >&2; exit 3", false, "failed with exit code 3: policy server down"},
		{"exit 3 with a JSON deny", `echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'; exit 3`, false, "failed with exit code 3"},
		{"binary junk", `head -c 3000 /dev/urandom; printf '\000\377{'`, false, ""},
		{"half a JSON answer", `printf '{"hookSpecificOutput": {"permissionDecision": "deny"'`, false, ""},
		{"JSON of another shape", `echo '[1, 2, 3]'`, false, ""},
		{"a flood of output", `yes 'junk junk junk' | head -c 5000000`, false, ""},
		{"junk on stderr with exit 2 still blocks", `printf 'no\000\377' >&2; exit 2`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := project(t, hookSpec{event: PreToolUse, script: tt.script})
			o := r.PreToolUse(t.Context(), ToolCall{Name: "Bash", ID: "toolu_1", Input: json.RawMessage(`{"command":"ls"}`)})
			if (o.Decision == Deny) != tt.deny || (!tt.deny && o.Decision != "") {
				t.Errorf("decision %q, want deny=%v", o.Decision, tt.deny)
			}
			got := summarize(o.Outcome)
			if tt.message == "" && len(got.Messages) > 0 {
				t.Errorf("messages %q, want none", got.Messages)
			}
			if tt.message != "" && (len(got.Messages) != 1 || !strings.Contains(got.Messages[0], tt.message) || !strings.Contains(got.Messages[0], "hook0.sh")) {
				t.Errorf("messages %q, want one naming the hook and saying %q", got.Messages, tt.message)
			}
		})
	}
}
