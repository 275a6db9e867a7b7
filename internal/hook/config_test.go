package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/settings"
)

func TestAdd(t *testing.T) {
	type cmds map[Event][]Command // the commands for query "Bash" / "startup"
	tests := []struct {
		name     string
		raw      string
		want     cmds
		warnings []string // parts of each warning, in order
	}{
		{
			name: "Claude Code's shape",
			raw:  `{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./check.sh","timeout":30}]}],"Stop":[{"hooks":[{"type":"command","command":"make test"}]}]}`,
			want: cmds{
				PreToolUse: {{Command: "./check.sh", Timeout: 30 * time.Second, File: "s.json"}},
				Stop:       {{Command: "make test", File: "s.json"}},
			},
		},
		{
			name: "fractional timeout and statusMessage",
			raw:  `{"SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"a","timeout":0.5,"statusMessage":"loading"}]}]}`,
			want: cmds{SessionStart: {{Command: "a", Timeout: 500 * time.Millisecond, File: "s.json"}}},
		},
		{
			name:     "unknown and later events are skipped",
			raw:      `{"PermissionRequest":[{"hooks":[{"type":"command","command":"a"}]}],"BeforeLunch":[],"Stop":[{"hooks":[{"type":"command","command":"b"}]}]}`,
			want:     cmds{Stop: {{Command: "b", File: "s.json"}}},
			warnings: []string{`unknown hook event "BeforeLunch"`, "does not run PermissionRequest hooks yet"},
		},
		{
			name:     "unknown fields are ignored",
			raw:      `{"Stop":[{"hooks":[{"type":"command","command":"b","async":true}],"label":"x"}]}`,
			want:     cmds{Stop: {{Command: "b", File: "s.json"}}},
			warnings: []string{`hooks.Stop[0]: field "label" is not supported`, `hooks.Stop[0].hooks[0]: field "async" is not supported`},
		},
		{
			name: "hooks cairn cannot run are skipped",
			raw:  `{"Stop":[{"hooks":[{"type":"prompt","prompt":"is it done?"},{"type":"command"},{"type":"command","command":"ok","timeout":-1}]}]}`,
			want: cmds{Stop: {{Command: "ok", File: "s.json"}}},
			warnings: []string{
				`has type "prompt"; cairn runs only "command" hooks`,
				"has no command",
				"timeout -1 is not a positive number of seconds",
			},
		},
		{
			name:     "a bad matcher skips its group",
			raw:      `{"PreToolUse":[{"matcher":"Bash(","hooks":[{"type":"command","command":"a"}]},{"matcher":"Bash","hooks":[{"type":"command","command":"b"}]}]}`,
			want:     cmds{PreToolUse: {{Command: "b", File: "s.json"}}},
			warnings: []string{`matcher "Bash(" is not a valid regular expression`},
		},
		{
			name:     "wrong shapes",
			raw:      `{"PreToolUse":{"matcher":"Bash"},"Stop":["make test"],"PostToolUse":[{"hooks":"x"}]}`,
			want:     cmds{},
			warnings: []string{"hooks.PostToolUse[0] must be an object", "hooks.PreToolUse must be a list", "hooks.Stop[0] must be an object"},
		},
		{
			name:     "not an object",
			raw:      `["PreToolUse"]`,
			want:     cmds{},
			warnings: []string{`"hooks" must be an object keyed by event name`},
		},
		{name: "null", raw: `null`, want: cmds{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{}
			warnings := c.Add("s.json", []byte(tt.raw))
			got := cmds{}
			for _, e := range Events {
				query := "Bash"
				if e == SessionStart {
					query = "startup"
				}
				if cs := c.Commands(e, query); cs != nil {
					got[e] = cs
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) || !strings.HasPrefix(warnings[i], "hooks in s.json: ") {
					t.Errorf("warning %d is %q, want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"", []string{"Bash", "mcp__x__y"}, nil},
		{"*", []string{"Bash", "Edit"}, nil},
		{"Bash", []string{"Bash"}, []string{"bash", "BashOutput", "Edit"}},
		{"Edit|Write", []string{"Edit", "Write"}, []string{"MultiEdit", "Read"}},
		{"Notebook.*", []string{"NotebookEdit", "NotebookRead"}, []string{"Edit"}},
		{"^Web", []string{"WebFetch", "WebSearch"}, []string{"NotWeb"}},
		{"mcp__github__.*", []string{"mcp__github__create_issue"}, []string{"mcp__gitlab__x"}},
		{"mcp__memory", []string{"mcp__memory"}, []string{"mcp__memory__save"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			m, err := compileMatcher(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tt.match {
				if !m(q) {
					t.Errorf("%q does not match %q", tt.pattern, q)
				}
			}
			for _, q := range tt.miss {
				if m(q) {
					t.Errorf("%q matches %q", tt.pattern, q)
				}
			}
		})
	}
}

func TestLoadCombinesFiles(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user := filepath.Join(home, "settings.json")
	team := filepath.Join(proj, ".claude", "settings.json")
	local := filepath.Join(proj, ".cairn", "settings.local.json")
	write(user, `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"user-audit"}]}]}}`)
	write(team, `{"model":"x","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"team-guard"},{"type":"command","command":"user-audit"}]}],"Stop":[{"hooks":[{"type":"command","command":"team-stop"}]}]}}`)
	write(local, `{"hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"local-edit"}]}],"Nope":[]}}`)
	write(filepath.Join(proj, ".cairn", "settings.json"), `{"hooks": null}`)

	cfg, warnings := Load(settings.Paths(home, proj))
	if len(warnings) != 1 || !strings.Contains(warnings[0], local) || !strings.Contains(warnings[0], `"Nope"`) {
		t.Errorf("warnings %q", warnings)
	}
	names := func(cs []Command) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Command+" ("+filepath.Base(filepath.Dir(c.File))+")")
		}
		return out
	}
	base := filepath.Base(home)
	if diff := cmp.Diff([]string{"user-audit (" + base + ")", "team-guard (.claude)"}, names(cfg.Commands(PreToolUse, "Bash"))); diff != "" {
		t.Errorf("Bash hooks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user-audit (" + base + ")", "local-edit (.cairn)"}, names(cfg.Commands(PreToolUse, "Edit"))); diff != "" {
		t.Errorf("Edit hooks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-stop (.claude)"}, names(cfg.Commands(Stop, ""))); diff != "" {
		t.Errorf("Stop hooks (-want +got):\n%s", diff)
	}

	// Any file can turn every hook off.
	write(filepath.Join(proj, ".claude", "settings.local.json"), `{"disableAllHooks": true}`)
	cfg, _ = Load(settings.Paths(home, proj))
	if !cfg.Empty() {
		t.Errorf("disableAllHooks left %v", cfg.Commands(PreToolUse, "Bash"))
	}
}

func TestLoadBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(bad, []byte(`{"hooks": `), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, warnings := Load([]string{bad, filepath.Join(dir, "missing.json")})
	if !cfg.Empty() || len(warnings) != 1 || !strings.Contains(warnings[0], "is not a JSON object") {
		t.Errorf("config %v, warnings %q", cfg, warnings)
	}
}
