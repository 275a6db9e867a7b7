package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// readyTool is a tool whose call makes the late tools ready.
type readyTool struct {
	name  string
	ready *bool
}

func (r readyTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: r.name, Description: "a tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (readyTool) ReadOnly(json.RawMessage) bool        { return true }
func (readyTool) Destructive(json.RawMessage) bool     { return false }
func (readyTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (r readyTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	if r.ready != nil {
		*r.ready = true
	}
	return tool.Text("ok"), nil
}

// TestLateTools: tools that become ready during a turn join the next
// request with LateEachRequest (a headless run's one turn), and only the
// next turn without it (the terminal UI); either way Late's tools and its
// system prompt section join once.
func TestLateTools(t *testing.T) {
	for _, tc := range []struct {
		name        string
		eachRequest bool
		want        [][]string // tool names of each request
		asked       int        // times Late is asked
	}{
		{"each request", true, [][]string{{"Start"}, {"Start", "Late"}, {"Start", "Late"}}, 3},
		{"each turn", false, [][]string{{"Start"}, {"Start"}, {"Start", "Late"}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, asked := false, 0
			late := func() ([]tool.Tool, string, bool) {
				asked++
				if !ready {
					return nil, "", false
				}
				return []tool.Tool{readyTool{name: "Late"}}, "# Late instructions", true
			}
			m := modeltest.NewScripted(
				modeltest.Call(modeltest.ToolUse("t1", "Start", `{}`)),
				modeltest.Say("first turn done"),
				modeltest.Say("second turn done"),
			)
			a := openLate(t, m, readyTool{name: "Start", ready: &ready}, late, tc.eachRequest, nil)
			drain(t, a, "first")
			drain(t, a, "second")
			var got [][]string
			for i, req := range m.Requests() {
				var names []string
				for _, s := range req.Tools {
					if s.Name == "Start" || s.Name == "Late" {
						names = append(names, s.Name)
					}
				}
				got = append(got, names)
				hasSection := slices.ContainsFunc(req.System, func(b model.SystemBlock) bool { return strings.Contains(b.Text, "# Late instructions") })
				if hasSection != slices.Contains(names, "Late") {
					t.Errorf("request %d: Late's section in the system prompt %v, its tool %v", i+1, hasSection, slices.Contains(names, "Late"))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tools of each request (-want +got):\n%s", diff)
			}
			if asked != tc.asked {
				t.Errorf("Late was asked %d times, want %d: once its tools joined it is not asked again", asked, tc.asked)
			}
		})
	}
}

// TestLateToolsInSteps: tools Late brings before it is done join the
// request at hand (a headless run's first request gets the servers ready
// by then), the rest join once it is done, and each system prompt carries
// the section Late gave last.
func TestLateToolsInSteps(t *testing.T) {
	ready, asked := false, 0
	late := func() ([]tool.Tool, string, bool) {
		asked++
		switch {
		case asked == 1:
			return []tool.Tool{readyTool{name: "Early"}}, "# Early instructions", false
		case !ready:
			return nil, "", false
		}
		return []tool.Tool{readyTool{name: "Late"}}, "# Early and Late instructions", true
	}
	m := modeltest.NewScripted(
		modeltest.Call(modeltest.ToolUse("t1", "Start", `{}`)),
		modeltest.Say("first turn done"),
		modeltest.Say("second turn done"),
	)
	a := openLate(t, m, readyTool{name: "Start", ready: &ready}, late, true, nil)
	drain(t, a, "first")
	drain(t, a, "second")
	type request struct {
		Tools   []string
		Section string
	}
	var got []request
	for _, req := range m.Requests() {
		var r request
		for _, s := range req.Tools {
			if s.Name == "Start" || s.Name == "Early" || s.Name == "Late" {
				r.Tools = append(r.Tools, s.Name)
			}
		}
		for _, b := range req.System {
			if i := strings.Index(b.Text, "# Early"); i >= 0 {
				r.Section = strings.SplitN(b.Text[i:], "\n", 2)[0]
			}
		}
		got = append(got, r)
	}
	want := []request{
		{[]string{"Start", "Early"}, "# Early instructions"},
		{[]string{"Start", "Early", "Late"}, "# Early and Late instructions"},
		{[]string{"Start", "Early", "Late"}, "# Early and Late instructions"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("each request (-want +got):\n%s", diff)
	}
	if asked != 3 {
		t.Errorf("Late was asked %d times, want 3: until it is done, then never", asked)
	}
}

// describedTool is a tool whose description tells two of one name apart.
type describedTool struct {
	readyTool
	description string
}

func (d describedTool) Spec() model.ToolSpec {
	s := d.readyTool.Spec()
	s.Description = d.description
	return s
}

// TestLateToolReplaced: a tool Late brings again under a name it brought
// before (a server configured earlier, up late, takes the name) replaces
// the first in place, and the other tools of that step still join.
func TestLateToolReplaced(t *testing.T) {
	asked := 0
	late := func() ([]tool.Tool, string, bool) {
		asked++
		if asked == 1 {
			return []tool.Tool{describedTool{readyTool{name: "Shared"}, "from B"}}, "", false
		}
		return []tool.Tool{describedTool{readyTool{name: "Shared"}, "from A"}, readyTool{name: "OnlyA"}}, "", true
	}
	var warnings []string
	a := openLate(t, modeltest.NewScripted(), readyTool{name: "Start"}, late, true, func(w string) { warnings = append(warnings, w) })
	specs := func() []string {
		var out []string
		for _, s := range a.ToolSpecs() {
			if s.Name != "Start" && s.Name != "Shared" && s.Name != "OnlyA" {
				continue
			}
			out = append(out, s.Name+": "+s.Description)
		}
		return out
	}
	a.JoinLate()
	if diff := cmp.Diff([]string{"Start: a tool", "Shared: from B"}, specs()); diff != "" {
		t.Errorf("after the first step (-want +got):\n%s", diff)
	}
	a.JoinLate()
	if diff := cmp.Diff([]string{"Start: a tool", "Shared: from A", "OnlyA: a tool"}, specs()); diff != "" {
		t.Errorf("after the second step (-want +got):\n%s", diff)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
}

// openLate opens a session with one tool from the start and late, closed
// when the test ends.
func openLate(t *testing.T, m model.Model, start tool.Tool, late func() ([]tool.Tool, string, bool), eachRequest bool, warn func(string)) *agent.Agent {
	t.Helper()
	cwd, home := t.TempDir(), session.Home{Dir: t.TempDir()}
	a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd,
		Instructions: instructions.NewTracker(instructions.Options{Cwd: cwd, Home: home.Dir, Managed: []string{}, ManagedRules: []string{}}),
		Model:        m, ModelName: "claude-test", MaxTokens: 4000, Entrypoint: "sdk-cli", DisableAutoCompact: true,
		Tools: []tool.Tool{start}, Late: late, LateEachRequest: eachRequest, Warn: warn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
