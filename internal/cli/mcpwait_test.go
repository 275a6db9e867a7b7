package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/mcp/mcptest"
	"github.com/cairn-dev/cairn/tool"
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

// TestLateInStepsOwnerChanged: servers "a.b" (configured first, up late)
// and "a_b" (up at once) offer tools of the same names. The first step
// gives a_b's; once both are up the name is a.b's, as Servers' warnings
// and /mcp say, so the second step gives a.b's tool in its place.
func TestLateInStepsOwnerChanged(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	cmd, env := mcptest.Command("gated")
	env[mcptest.GateEnvVar] = gate
	fastCmd, fastEnv := mcptest.Command("notes")
	st := mcp.Start(t.Context(), []mcp.Config{
		{Name: "a.b", Source: "test", Type: mcp.Stdio, Command: cmd, Env: env},
		{Name: "a_b", Source: "test", Type: mcp.Stdio, Command: fastCmd, Env: fastEnv},
	}, mcp.Options{Timeout: time.Minute})
	defer st.Close()
	for !slices.Equal(st.Pending(), []string{"a.b"}) { // a_b up, a.b held by its gate
		select {
		case <-st.Done():
			t.Fatalf("the servers settled before the gate opened: %q", st.Servers().Warnings())
		case <-time.After(10 * time.Millisecond):
		}
	}
	const name = "mcp__a_b__echo"
	find := func(ts []tool.Tool) tool.Tool {
		for _, tl := range ts {
			if tl.Spec().Name == name {
				return tl
			}
		}
		return nil
	}
	late := lateInSteps(st)
	first, _, ok := late()
	fast := find(first)
	if ok || fast == nil {
		t.Fatalf("first step: ok %v, %s given: %v", ok, name, fast != nil)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	servers := st.Wait(t.Context())
	second, _, ok := late()
	owned := find(servers.Tools())
	if !ok || owned == nil || owned == fast {
		t.Fatalf("once all are up: ok %v; Servers' %s is a.b's: %v", ok, name, owned != nil && owned != fast)
	}
	if got := find(second); got != owned {
		t.Errorf("the second step does not replace a_b's %s with a.b's, which Servers keeps (%q)", name, servers.Warnings())
	}
}

// TestSayWaiting: the line naming the servers a run waits for, and none
// when the last of them settled between the timer and the line.
func TestSayWaiting(t *testing.T) {
	for _, tc := range []struct {
		pending []string
		want    string
	}{
		{[]string{"notes", "stuck"}, "cairn: waiting for MCP servers still starting: notes, stuck (the prompt names notes; each gets at most 30s, which MCP_TIMEOUT sets in milliseconds)\n"},
		{nil, ""},
	} {
		var b strings.Builder
		sayWaiting(&b, tc.pending, "the prompt names notes", 30*time.Second)
		if diff := cmp.Diff(tc.want, b.String()); diff != "" {
			t.Errorf("pending %q (-want +got):\n%s", tc.pending, diff)
		}
	}
}
