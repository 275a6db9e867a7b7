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
		Allow:                 []Sourced{{"A", user}, {"B", claude}},
		Ask:                   []Sourced{{"C", cairn}},
		Deny:                  []Sourced{{"D", claude}},
		DefaultMode:           "acceptEdits",
		DefaultModeFile:       cairn,
		AdditionalDirectories: []Sourced{{"../x", claude}},
		DisableBypass:         true,
		DisableBypassFile:     cairn,
		Files:                 []string{user, claude, filepath.Join(proj, ".claude", "settings.local.json"), cairn, filepath.Join(proj, ".cairn", "settings.local.json")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadPermissions (-want +got):\n%s", diff)
	}
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
