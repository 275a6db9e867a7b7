package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoad(t *testing.T) {
	type files map[string]string // path under the temp dir → content
	for _, tc := range []struct {
		name      string
		files     files
		wantDays  int
		wantTrash int
		wantRaw   map[string]string
		wantErr   string // a part of the error, naming the file
		warn      string // a part of the one warning
	}{
		{name: "none", wantDays: 30, wantTrash: 30, wantRaw: map[string]string{}},
		{
			name: "later files override earlier, key by key",
			files: files{
				"home/settings.json":                   `{"cleanupPeriodDays": 10, "model": "a", "env": {"A": "1"}}`,
				"proj/.claude/settings.json":           `{"cleanupPeriodDays": 20, "env": {"B": "2"}}`,
				"proj/.claude/settings.local.json":     `{"trashRetentionDays": 5}`,
				"proj/.cairn/settings.json":            `{"cleanupPeriodDays": 40}`,
				"proj/.cairn/settings.local.json":      `{"model": "b"}`,
				"elsewhere/.cairn/settings.local.json": `{"model": "ignored"}`,
			},
			wantDays: 40, wantTrash: 5,
			wantRaw: map[string]string{
				"cleanupPeriodDays": "40", "model": `"b"`, "env": `{"B": "2"}`, "trashRetentionDays": "5",
			},
		},
		{
			name:     "empty file and null",
			files:    files{"home/settings.json": "", "proj/.cairn/settings.json": "null"},
			wantDays: 30, wantTrash: 30, wantRaw: map[string]string{},
		},
		{
			name:    "invalid JSON holding a restricting setting names the file and line",
			files:   files{"proj/.claude/settings.local.json": "{\n\"cleanupPeriodDays\": 3,}"},
			wantErr: filepath.Join("proj", ".claude", "settings.local.json") + " is not valid at line 2, column 24",
		},
		{
			name: "invalid JSON is skipped; the other files apply",
			files: files{
				"home/settings.json":               `{"model": "a", "cleanupPeriodDays": 7}`,
				"proj/.claude/settings.local.json": `{"model": "b",}`,
			},
			wantDays: 7, wantTrash: 30,
			wantRaw: map[string]string{"model": `"a"`, "cleanupPeriodDays": "7"},
			warn:    filepath.Join("proj", ".claude", "settings.local.json") + " is not valid at line 1, column 15",
		},
		{
			name:     "not an object",
			files:    files{"home/settings.json": `[1]`},
			wantDays: 30, wantTrash: 30, wantRaw: map[string]string{},
			warn: filepath.Join("home", "settings.json") + " is not valid at line 1, column 1: it holds array where a JSON object",
		},
		{
			name:    "days must be whole",
			files:   files{"proj/.cairn/settings.json": `{"cleanupPeriodDays": 1.5}`},
			wantErr: filepath.Join("proj", ".cairn", "settings.json") + " is 1.5",
		},
		{
			name:    "days must not be negative",
			files:   files{"home/settings.json": `{"trashRetentionDays": -1}`},
			wantErr: filepath.Join("home", "settings.json") + " is -1",
		},
		{
			name:    "days must be a number",
			files:   files{"home/settings.json": `{"cleanupPeriodDays": "30"}`},
			wantErr: `"cleanupPeriodDays"`,
		},
		{
			name:     "zero is allowed",
			files:    files{"home/settings.json": `{"cleanupPeriodDays": 0}`},
			wantDays: 0, wantTrash: 30, wantRaw: map[string]string{"cleanupPeriodDays": "0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range tc.files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(filepath.Join(root, "home"), filepath.Join(root, "proj"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tc.warn == "") != (len(s.Warnings) == 0) || (tc.warn != "" && (len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], tc.warn))) {
				t.Errorf("warnings = %q, want one saying %q", s.Warnings, tc.warn)
			}
			if s.CleanupPeriodDays != tc.wantDays || s.TrashRetentionDays != tc.wantTrash {
				t.Errorf("days = %d, %d; want %d, %d", s.CleanupPeriodDays, s.TrashRetentionDays, tc.wantDays, tc.wantTrash)
			}
			raw := map[string]string{}
			for k, v := range s.Raw {
				raw[k] = string(v)
			}
			if diff := cmp.Diff(tc.wantRaw, raw); diff != "" {
				t.Errorf("Raw (-want +got):\n%s", diff)
			}
			for k := range s.Raw {
				if !strings.HasPrefix(s.Source[k], root) {
					t.Errorf("Source[%q] = %q", k, s.Source[k])
				}
			}
		})
	}
}

func TestPathsOrder(t *testing.T) {
	got := Paths("/h", "/p")
	want := []string{
		"/h/settings.json",
		"/p/.claude/settings.json", "/p/.claude/settings.local.json",
		"/p/.cairn/settings.json", "/p/.cairn/settings.local.json",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Paths (-want +got):\n%s", diff)
	}
}
