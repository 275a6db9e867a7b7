package cli

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMCPGrace: CAIRN_MCP_GRACE_MS sets how long a headless run waits for
// MCP servers it does not need; unset or not a number, the default.
func TestMCPGrace(t *testing.T) {
	type result struct {
		Grace time.Duration
		Warns bool
	}
	for _, tc := range []struct {
		value string
		want  result
	}{
		{"", result{mcpGraceDefault, false}},
		{"0", result{0, false}},
		{" 250 ", result{250 * time.Millisecond, false}},
		{"-1", result{mcpGraceDefault, true}},
		{"3s", result{mcpGraceDefault, true}},
	} {
		grace, w := mcpGrace(func(k string) string {
			if k == "CAIRN_MCP_GRACE_MS" {
				return tc.value
			}
			return ""
		})
		if diff := cmp.Diff(tc.want, result{grace, w != ""}); diff != "" {
			t.Errorf("CAIRN_MCP_GRACE_MS=%q (-want +got):\n%s", tc.value, diff)
		}
	}
}
