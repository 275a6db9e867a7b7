package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/cli"
)

// permRun runs `cairn permissions …` in-process from cwd, with home as
// both CAIRN_HOME's parent and HOME.
func permRun(t *testing.T, home, cwd string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			switch k {
			case "CAIRN_HOME":
				return filepath.Join(home, ".cairn")
			case "HOME":
				return home
			}
			return ""
		},
		Now: time.Now,
		Cwd: cwd,
	}
	code = cli.Run(context.Background(), append([]string{"permissions"}, args...), env)
	return code, out.String(), errb.String()
}

func permProject(t *testing.T) (home, proj string) {
	t.Helper()
	root := t.TempDir()
	home, proj = filepath.Join(root, "home"), filepath.Join(root, "proj")
	files := map[string]string{
		filepath.Join(home, ".cairn", "settings.json"):       `{"permissions": {"allow": ["Bash(make:*)"]}}`,
		filepath.Join(proj, ".claude", "settings.json"):      `{"permissions": {"allow": ["Bash(git status:*)", "Bash(npm run test:*)"], "deny": ["Bash(rm -rf /)", "Read(./.env)"]}}`,
		filepath.Join(proj, ".cairn", "settings.local.json"): `{"permissions": {"ask": ["Bash(git push:*)"], "allow": ["Bash(rm x)"]}}`,
		filepath.Join(proj, "src", "main.go"):                "package main\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, proj
}

func TestPermissionsCheckJSON(t *testing.T) {
	home, proj := permProject(t)
	type decision struct {
		Decision string `json:"decision"`
		Rule     string `json:"rule"`
	}
	for _, tc := range []struct {
		name string
		args []string
		want decision
	}{
		{"allowed by project rule", []string{"--tool", "Bash", "--input", `{"command":"git status"}`}, decision{"allow", "Bash(git status:*)"}},
		{"compound line asks", []string{"--tool", "Bash", "--input", `{"command":"git status; rm -rf ~"}`}, decision{"ask", ""}},
		{"deny in any sub-command", []string{"--tool", "Bash", "--input", `{"command":"git status && rm -rf /"}`}, decision{"deny", "Bash(rm -rf /)"}},
		{"user settings apply", []string{"--tool", "Bash", "--input", `{"command":"make test"}`}, decision{"allow", "Bash(make:*)"}},
		{"local ask rule", []string{"--tool", "Bash", "--input", `{"command":"git push"}`}, decision{"ask", "Bash(git push:*)"}},
		{"local allow rule", []string{"--tool", "Bash", "--input", `{"command":"rm x"}`}, decision{"allow", "Bash(rm x)"}},
		{"read rule", []string{"--tool", "Read", "--input", `{"file_path":".env"}`}, decision{"deny", "Read(./.env)"}},
		{"read-only tool in project", []string{"--tool", "Read", "--input", `{"file_path":"src/main.go"}`}, decision{"allow", ""}},
		{"edit in default mode", []string{"--tool", "Edit", "--input", `{"file_path":"src/main.go"}`}, decision{"ask", ""}},
		{"edit in acceptEdits", []string{"--tool", "Edit", "--input", `{"file_path":"src/main.go"}`, "--mode", "acceptEdits"}, decision{"allow", ""}},
		{"plan mode denies", []string{"--tool", "Edit", "--input", `{"file_path":"src/main.go"}`, "--mode", "plan"}, decision{"deny", ""}},
		{"bypass", []string{"--tool", "Bash", "--input", `{"command":"npm publish"}`, "--mode", "bypassPermissions"}, decision{"allow", ""}},
		{"headless", []string{"--tool", "Bash", "--input", `{"command":"npm publish"}`, "--headless"}, decision{"deny", ""}},
		{"allowedTools flag", []string{"--tool", "Bash", "--input", `{"command":"npm publish"}`, "--allowedTools", "Bash(npm publish)"}, decision{"allow", "Bash(npm publish)"}},
		{"disallowedTools flag", []string{"--tool", "Bash", "--input", `{"command":"git status"}`, "--disallowedTools", "Bash(git:*)"}, decision{"deny", "Bash(git:*)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := permRun(t, home, proj, append([]string{"check", "--json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			var full map[string]any
			if err := json.Unmarshal([]byte(out), &full); err != nil {
				t.Fatalf("stdout is not one JSON document: %q", out)
			}
			for _, k := range []string{"decision", "reason", "rule"} {
				if _, ok := full[k]; !ok {
					t.Errorf("output lacks %q: %s", k, out)
				}
			}
			var got decision
			_ = json.Unmarshal([]byte(out), &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}

func TestPermissionsCheckText(t *testing.T) {
	home, proj := permProject(t)
	code, out, _ := permRun(t, home, proj, "check", "--tool", "Bash", "--input", `{"command":"rm -rf /"}`)
	if code != 0 || !strings.HasPrefix(out, "deny: ") || !strings.Contains(out, "(rule: Bash(rm -rf /))") || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

func TestPermissionsCheckUsage(t *testing.T) {
	home, proj := permProject(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"--tool", "Bash", "--input", `{}`, "--mode", "yolo"}, "unknown permission mode"},
		{"invalid JSON", []string{"--tool", "Bash", "--input", `{"command":`}, "must be a JSON object"},
		{"not an object", []string{"--tool", "Bash", "--input", `["ls"]`}, "must be a JSON object"},
		{"no tool", []string{"--input", `{}`}, "--tool is required"},
		{"no input", []string{"--tool", "Bash"}, "--input is required"},
		{"unknown flag", []string{"--tool", "Bash", "--input", `{}`, "--nope"}, "unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := permRun(t, home, proj, append([]string{"check"}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestPermissionsCheckBrokenSettings: a settings file whose loss could
// weaken protection (a malformed deny list) stops with an error naming the
// file; one that could only allow less (a malformed allow list) is skipped
// with a warning and the rest still loads.
func TestPermissionsCheckBrokenSettings(t *testing.T) {
	for _, tc := range []struct {
		settings string
		code     int
	}{
		{`{"permissions": {"deny": "Bash"}}`, 1},
		{`{"permissions": {"allow": "Bash"}}`, 0},
	} {
		home, proj := permProject(t)
		if err := os.WriteFile(filepath.Join(proj, ".cairn", "settings.json"), []byte(tc.settings), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := permRun(t, home, proj, "check", "--tool", "Bash", "--input", `{"command":"ls"}`)
		if code != tc.code || !strings.Contains(errOut, filepath.Join(".cairn", "settings.json")) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming the file", tc.settings, code, errOut, tc.code)
		}
	}
}

// TestPermissionsCheckExplainsPaths: a path constraint's decision names
// the path, the folders it fell outside and a rule that would allow it,
// in JSON and in text; --add-dir makes the folder one the session may use.
func TestPermissionsCheckExplainsPaths(t *testing.T) {
	home, proj := permProject(t)
	extra := filepath.Join(filepath.Dir(proj), "extra")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	in := `{"command":"cd .. && make install"}`
	code, out, errOut := permRun(t, home, proj, "check", "--tool", "Bash", "--input", in, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Decision string `json:"decision"`
		Path     struct {
			Path      string   `json:"path"`
			Access    string   `json:"access"`
			Command   string   `json:"command"`
			Outside   []string `json:"outside"`
			AllowWith string   `json:"allowWith"`
		} `json:"path"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Decision != "ask" || got.Path.Path != filepath.Dir(proj) || got.Path.Access != "cwd" ||
		!cmp.Equal(got.Path.Outside, []string{proj}) || got.Path.AllowWith != "Bash(make install)" {
		t.Errorf("got %+v", got)
	}

	code, out, _ = permRun(t, home, proj, "check", "--tool", "Bash", "--input", `{"command":"make -C ../extra"}`)
	if code != 0 || !strings.HasPrefix(out, "ask: ") || !strings.Contains(out, "path: "+extra) ||
		!strings.Contains(out, "outside: "+proj) || !strings.Contains(out, "allowed by a rule such as: Bash(make -C ../extra)") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	code, out, _ = permRun(t, home, proj, "check", "--tool", "Bash", "--input", `{"command":"make -C ../extra"}`, "--add-dir", "../extra")
	if code != 0 || !strings.HasPrefix(out, "allow: ") {
		t.Errorf("with --add-dir: exit %d\n%s", code, out)
	}
	code, _, errOut = permRun(t, home, proj, "check", "--tool", "Bash", "--input", in, "--add-dir", "nowhere")
	if code != 2 || !strings.Contains(errOut, "--add-dir nowhere: no such directory") {
		t.Errorf("missing --add-dir: exit %d: %s", code, errOut)
	}
}
