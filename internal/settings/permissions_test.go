package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadPermissions(t *testing.T) {
	dir := t.TempDir()
	home, proj := filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	files := map[string]string{
		filepath.Join(home, "settings.json"):                  `{"permissions": {"allow": ["A"], "defaultMode": "plan"}}`,
		filepath.Join(proj, ".claude", "settings.json"):       `{"permissions": {"allow": ["B"], "deny": ["D"], "additionalDirectories": ["../x"]}}`,
		filepath.Join(proj, ".claude", "settings.local.json"): `{"model": "m"}`,
		filepath.Join(proj, ".cairn", "settings.json"):        `{"permissions": {"ask": ["C"], "defaultMode": "acceptEdits", "disableBypassPermissionsMode": "disable"}}`,
		filepath.Join(proj, ".cairn", "settings.local.json"):  `{"permissions": null}`,
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadPermissions(home, proj)
	if err != nil {
		t.Fatal(err)
	}
	user, claude, cairn := filepath.Join(home, "settings.json"), filepath.Join(proj, ".claude", "settings.json"), filepath.Join(proj, ".cairn", "settings.json")
	want := &Permissions{
		Allow:                 []Sourced{{"A", user, 1}, {"B", claude, 1}},
		Ask:                   []Sourced{{"C", cairn, 1}},
		Deny:                  []Sourced{{"D", claude, 1}},
		DefaultMode:           "acceptEdits",
		DefaultModeFile:       cairn,
		AdditionalDirectories: []Sourced{{"../x", claude, 1}},
		DisableBypass:         true,
		DisableBypassFile:     cairn,
		Files:                 []string{user, claude, filepath.Join(proj, ".claude", "settings.local.json"), cairn, filepath.Join(proj, ".cairn", "settings.local.json")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadPermissions (-want +got):\n%s", diff)
	}
}

// TestLoadPermissionsFaults: what cannot be read is skipped with a
// warning when that only allows less, and is an error otherwise; both
// name the file and the line.
func TestLoadPermissionsFaults(t *testing.T) {
	tests := []struct {
		name    string
		content string // of .claude/settings.local.json; .cairn/settings.json is good
		wantErr string // the error names the file, then this
		warn    string // or the warning does
		allow   []string
	}{
		{
			name:    "trailing comma, allow only",
			content: "{\n  \"permissions\": {\n    \"allow\": [\"Bash(npm test)\",]\n  }\n}",
			warn:    "is not valid at line 3, column 32: invalid character ']' looking for beginning of value. It is ignored until it is fixed",
			allow:   []string{"Bash(go test:*)"},
		},
		{
			name:    "missing comma near a deny list",
			content: "{\"permissions\": {\n  \"deny\": [\"Read(./.env)\"]\n  \"allow\": []}}",
			wantErr: `is not valid at line 3, column 3: invalid character '"' after object key:value pair. It may hold "deny" settings, which restrict what cairn may do, so cairn does not run without it`,
		},
		{
			name:    "a PreToolUse hook",
			content: `{"hooks": {"PreToolUse": [}}`,
			wantErr: `It may hold "PreToolUse" settings`,
		},
		{
			name:    "escaped keys",
			content: `{"permissions": {"d\u0065ny": ["Bash"]},}`,
			wantErr: "It may hold escaped text",
		},
		{
			name:    "not an object",
			content: `["Bash(ls)"]`,
			warn:    "it holds array where a JSON object {...} must be. It is ignored",
			allow:   []string{"Bash(go test:*)"},
		},
		{
			name:    "allow of the wrong kind",
			content: "{\"permissions\": {\n  \"allow\": \"Bash\",\n  \"deny\": [\"WebFetch\"]}}",
			warn:    "line 2, column 1: permissions.allow must be a list of strings like [\"Bash(npm test)\"], not a string; it is ignored until it is fixed",
			allow:   []string{"Bash(go test:*)"},
		},
		{
			name:    "deny of the wrong kind",
			content: "{\"permissions\": {\n\n  \"deny\": [1]}}",
			wantErr: "line 3, column 1: permissions.deny must be a list of strings",
		},
		{
			name:    "defaultMode of the wrong kind",
			content: `{"permissions": {"defaultMode": 1}}`,
			wantErr: "permissions.defaultMode must be a string, not a number",
		},
		{
			name:    "permissions of the wrong kind",
			content: `{"permissions": ["Bash(ls)"]}`,
			warn:    `"permissions" must be an object`,
			allow:   []string{"Bash(go test:*)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proj := t.TempDir()
			bad := filepath.Join(proj, ".claude", "settings.local.json")
			good := filepath.Join(proj, ".cairn", "settings.json")
			for p, c := range map[string]string{bad: tt.content, good: `{"permissions": {"allow": ["Bash(go test:*)"]}}`} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadPermissions("", proj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v\nwant one naming %s and saying %q", err, bad, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], bad) || !strings.Contains(got.Warnings[0], tt.warn) {
				t.Errorf("warnings = %q\nwant one naming %s and saying %q", got.Warnings, bad, tt.warn)
			}
			var allow []string
			for _, r := range got.Allow {
				allow = append(allow, r.Value)
			}
			if d := cmp.Diff(tt.allow, allow); d != "" {
				t.Errorf("allow rules (-want +got):\n%s", d)
			}
		})
	}
}

func TestRuleLines(t *testing.T) {
	proj := t.TempDir()
	p := filepath.Join(proj, ".cairn", "settings.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	content := `{
  "model": "x",
  "permissions": {
    "allow": [
      "Bash(ls)",

      "Read(./src/**)"
    ],
    "Deny": ["Bash(rm:*)", "WebFetch"]
  }
}`
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPermissions("", proj)
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, r := range append(got.Allow, got.Deny...) {
		where = append(where, r.Value+" @ "+strings.TrimPrefix(r.Where(), p+" "))
	}
	want := []string{"Bash(ls) @ line 5", "Read(./src/**) @ line 7", "Bash(rm:*) @ line 9", "WebFetch @ line 9"}
	if d := cmp.Diff(want, where); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
}

func FuzzScanPermissions(f *testing.F) {
	f.Add([]byte(`{"permissions": {"allow": ["a", "b"], "deny": [["x"]], "ask": {}}}`))
	f.Add([]byte(`{"permissions": [1, {"a": [}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pl := scanPermissions(data)
		for _, lines := range pl.lists {
			for _, l := range lines {
				if l < 1 || l > 1+strings.Count(string(data), "\n") {
					t.Fatalf("line %d out of range", l)
				}
			}
		}
	})
}

func TestLoadPermissionsWrongShape(t *testing.T) {
	proj := t.TempDir()
	p := filepath.Join(proj, ".cairn", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"permissions": {"deny": [1]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPermissions("", proj); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v, want one naming %s", err, p)
	}
}
