package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParse(t *testing.T) {
	getenv := env(map[string]string{"TOKEN": "s3cret", "DIR": "/srv", "EMPTY": ""})
	const file = "/p/.mcp.json"
	tests := []struct {
		name     string
		data     string
		want     []Config
		warnings []string // each warning contains the text
	}{
		{
			name: "stdio with env expansion",
			data: `{"mcpServers": {"notes": {"command": "${BIN:-notes-server}", "args": ["--root", "${DIR}/data", "plain $DIR"], "env": {"API_TOKEN": "${TOKEN}", "LEVEL": "${LEVEL:-info}"}}}}`,
			want: []Config{{Name: "notes", Source: file, Type: Stdio, Command: "notes-server", Args: []string{"--root", "/srv/data", "plain $DIR"}, Env: map[string]string{"API_TOKEN": "s3cret", "LEVEL": "info"}}},
		},
		{
			name: "explicit stdio type",
			data: `{"mcpServers": {"x": {"type": "stdio", "command": "x", "url": "http://ignored"}}}`,
			want: []Config{{Name: "x", Source: file, Type: Stdio, Command: "x"}},
		},
		{
			name: "http with headers",
			data: `{"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/${DIR:-x}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
			want: []Config{{Name: "remote", Source: file, Type: HTTP, URL: "https://mcp.example.com//srv/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
		},
		{
			name: "sse, and a url alone meaning http",
			data: `{"mcpServers": {"old": {"type": "sse", "url": "http://localhost:9000/sse"}, "bare": {"url": "http://localhost:9001/mcp"}}}`,
			want: []Config{
				{Name: "bare", Source: file, Type: HTTP, URL: "http://localhost:9001/mcp"},
				{Name: "old", Source: file, Type: SSE, URL: "http://localhost:9000/sse"},
			},
		},
		{
			name:     "an unset variable is left as written, with a warning",
			data:     `{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "E": "${EMPTY}"}}}}`,
			want:     []Config{{Name: "gh", Source: file, Type: Stdio, Command: "gh-mcp", Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "E": "${EMPTY}"}}},
			warnings: []string{`MCP server "gh" in /p/.mcp.json: environment variable`},
		},
		{
			name: "odd references stay as written",
			data: `{"mcpServers": {"odd": {"command": "a", "args": ["${}", "${UNCLOSED", "$${TOKEN}", "${:-d}"]}}}`,
			want: []Config{{Name: "odd", Source: file, Type: Stdio, Command: "a", Args: []string{"${}", "${UNCLOSED", "$s3cret", "d"}}},
		},
		{
			name: "bad entries are skipped, the others load",
			data: `{"mcpServers": {
				"good": {"command": "ok"},
				"text": "npx server",
				"list": [],
				"args": {"command": "x", "args": "--flag"},
				"nocmd": {"args": ["a"]},
				"ws": {"type": "ws", "url": "ws://x"},
				"nourl": {"type": "http"},
				"ftp": {"type": "http", "url": "ftp://files"},
				"envnum": {"command": "x", "env": {"N": 1}},
				"cmdnum": {"command": 7},
				"": {"command": "x"}
			}}`,
			want: []Config{{Name: "good", Source: file, Type: Stdio, Command: "ok"}},
			warnings: []string{
				`MCP server "" in /p/.mcp.json: a server needs a name`,
				`MCP server "args" in /p/.mcp.json: "args" must be a list of strings, not a string; the server is skipped`,
				`MCP server "cmdnum" in /p/.mcp.json: "command" must be a string, not a number`,
				`MCP server "envnum" in /p/.mcp.json: "env" must be an object of strings`,
				`MCP server "ftp" in /p/.mcp.json: url "ftp://files" is not an http:// or https:// address`,
				`MCP server "list" in /p/.mcp.json: the definition must be an object`,
				`MCP server "nocmd" in /p/.mcp.json: a stdio server needs a "command"`,
				`MCP server "nourl" in /p/.mcp.json: an http server needs a "url"`,
				`MCP server "text" in /p/.mcp.json: the definition must be an object`,
				`MCP server "ws" in /p/.mcp.json: type "ws" is not supported`,
			},
		},
		{name: "not JSON", data: `{"mcpServers": {`, warnings: []string{"/p/.mcp.json is not a valid JSON object"}},
		{name: "servers not an object", data: `{"mcpServers": ["a"]}`, warnings: []string{`/p/.mcp.json: "mcpServers" must be an object`}},
		{name: "no servers", data: `{"permissions": {}}`},
		{name: "null servers", data: `{"mcpServers": null}`},
		{name: "empty file", data: "  \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := Parse(file, []byte(tt.data), getenv)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("configs (-want +got):\n%s", diff)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d is %q, want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	userFile := filepath.Join(home, "settings.json")
	mcpFile := filepath.Join(project, ".mcp.json")
	claudeFile := filepath.Join(project, ".claude", "settings.json")
	cairnFile := filepath.Join(project, ".cairn", "settings.local.json")
	write(userFile, `{"mcpServers": {"shared": {"command": "from-user"}, "mine": {"command": "mine"}}}`)
	write(mcpFile, `{"mcpServers": {"shared": {"command": "from-project"}, "team": {"command": "team"}, "off": {"command": "off"}, "broken": 1}}`)
	write(claudeFile, `{"disabledMcpjsonServers": ["off", "local"]}`)
	write(cairnFile, `{"mcpServers": {"local": {"type": "http", "url": "http://localhost:1/mcp"}}}`)
	write(filepath.Join(project, ".cairn", "settings.json"), `{not json`) // reported by settings.Load

	got, warnings := Load(home, project, env(nil))
	want := []Config{
		{Name: "local", Source: cairnFile, Type: HTTP, URL: "http://localhost:1/mcp"},
		{Name: "mine", Source: userFile, Type: Stdio, Command: "mine"},
		{Name: "shared", Source: mcpFile, Type: Stdio, Command: "from-project", Unapproved: true},
		{Name: "team", Source: mcpFile, Type: Stdio, Command: "team", Unapproved: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `MCP server "broken" in `+mcpFile) {
		t.Errorf("warnings %q", warnings)
	}

	// A disabled list of the wrong kind is reported and ignored.
	write(claudeFile, `{"disabledMcpjsonServers": "off"}`)
	got, warnings = Load(home, project, env(nil))
	if len(got) != 5 || len(warnings) != 2 || !strings.Contains(warnings[1], claudeFile+`: "disabledMcpjsonServers" must be a list`) {
		t.Errorf("%d servers, warnings %q", len(got), warnings)
	}

	// Approvals count from the person's own files only.
	unapproved := func() (out []string) {
		got, _ := Load(home, project, env(nil))
		for _, c := range got {
			if c.Unapproved {
				out = append(out, c.Name)
			}
		}
		return out
	}
	write(claudeFile, `{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["team"], "mcpServers": {"committed": {"command": "c"}}}`) // committed with the repository
	if got := unapproved(); !slices.Equal(got, []string{"committed", "off", "shared", "team"}) {
		t.Errorf("a committed settings file approved servers: unapproved %v", got)
	}
	write(cairnFile, `{"enabledMcpjsonServers": ["team"]}`)
	if got := unapproved(); !slices.Equal(got, []string{"committed", "off", "shared"}) {
		t.Errorf("settings.local.json approving team: unapproved %v", got)
	}
	write(userFile, `{"enableAllProjectMcpServers": true}`)
	if got := unapproved(); len(got) != 0 {
		t.Errorf("the user's enableAllProjectMcpServers: unapproved %v", got)
	}

	// Nothing configured, nothing loaded.
	if got, warnings := Load(t.TempDir(), t.TempDir(), env(nil)); len(got) != 0 || len(warnings) != 0 {
		t.Errorf("empty project: %v %q", got, warnings)
	}
}

// TestProjectServers: the servers that come with the project are the
// ones `cairn mcp approve` takes, the disabled ones too, with the file
// that disables each.
func TestProjectServers(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	claudeLocal := filepath.Join(project, ".claude", "settings.local.json")
	write(filepath.Join(home, "settings.json"), `{"mcpServers": {"mine": {"command": "mine"}}}`)
	write(filepath.Join(project, ".mcp.json"), `{"mcpServers": {"team": {"command": "team"}, "off": {"command": "off"}, "remote": {"url": "${URL}"}}}`)
	write(filepath.Join(project, ".claude", "settings.json"), `{"mcpServers": {"committed": {"command": "c"}}}`)
	write(claudeLocal, `{"disabledMcpjsonServers": ["off"], "enabledMcpjsonServers": ["team"], "mcpServers": {"local": {"command": "l"}}}`)

	got, _ := ProjectServers(home, project, env(map[string]string{"URL": "https://mcp.example.com"}))
	want := map[string]string{"committed": "", "off": claudeLocal, "remote": "", "team": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("project servers (-want +got):\n%s", diff)
	}
	loaded, _ := Load(home, project, env(map[string]string{"URL": "https://mcp.example.com"}))
	var names []string
	for _, c := range loaded {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"committed", "local", "mine", "remote", "team"}) {
		t.Errorf("Load: %v", names)
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ server, tool, want string }{
		{"github", "get_issue", "mcp__github__get_issue"},
		{"my server.v2", "list-files", "mcp__my_server_v2__list-files"},
		{"café", "a/b", "mcp__caf___a_b"},
	} {
		if got := ToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
}

func TestEnvTimeouts(t *testing.T) {
	for _, tt := range []struct {
		name          string
		vars          map[string]string
		connect, call time.Duration
		nWarnings     int
	}{
		{name: "unset", vars: nil},
		{name: "set", vars: map[string]string{"MCP_TIMEOUT": "5000", "MCP_TOOL_TIMEOUT": " 90000 "}, connect: 5 * time.Second, call: 90 * time.Second},
		{name: "bad", vars: map[string]string{"MCP_TIMEOUT": "5s", "MCP_TOOL_TIMEOUT": "-1"}, nWarnings: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			connect, call, warnings := EnvTimeouts(env(tt.vars))
			if connect != tt.connect || call != tt.call || len(warnings) != tt.nWarnings {
				t.Errorf("got %v, %v, %q", connect, call, warnings)
			}
		})
	}
}

// TestCommittedLocalSettingsDoNotApprove: a repository that commits a
// settings.local.json cannot approve its own servers with it, nor start
// servers it defines; the same file, not tracked, does both.
func TestCommittedLocalSettingsDoNotApprove(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	project := t.TempDir()
	if out, err := exec.Command("git", "-C", project, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	local := filepath.Join(project, ".cairn", "settings.local.json")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"evil": {"command": "evil"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, []byte(`{"enableAllProjectMcpServers": true, "mcpServers": {"sneaky": {"command": "sneaky"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	unapproved := func() (out []string) {
		got, _ := Load(t.TempDir(), project, env(nil))
		for _, c := range got {
			if c.Unapproved {
				out = append(out, c.Name)
			}
		}
		return out
	}
	if got := unapproved(); len(got) != 0 {
		t.Errorf("the person's own settings.local.json: unapproved %v", got)
	}
	if out, err := exec.Command("git", "-C", project, "add", ".cairn/settings.local.json").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	if got := unapproved(); !slices.Equal(got, []string{"evil", "sneaky"}) {
		t.Errorf("a committed settings.local.json: unapproved %v, want both", got)
	}
}
