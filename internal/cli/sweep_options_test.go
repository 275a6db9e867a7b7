package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/session"
)

// TestSweepOptions reads the daily sweep's options from the settings:
// their periods, cleanupPeriodDays 0 as keeping every session, and
// invalid settings as an error that names the file (so a typo never
// deletes sessions early).
func TestSweepOptions(t *testing.T) {
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		settings string
		want     session.CleanupOptions
		wantErr  bool
	}{
		{"defaults", "", session.CleanupOptions{Now: now, MaxAge: 30 * day, TrashAge: 30 * day}, false},
		{"periods", `{"cleanupPeriodDays": 7, "trashRetentionDays": 2}`, session.CleanupOptions{Now: now, MaxAge: 7 * day, TrashAge: 2 * day}, false},
		{"zero keeps sessions", `{"cleanupPeriodDays": 0}`, session.CleanupOptions{Now: now, KeepSessions: true, TrashAge: 30 * day}, false},
		{"invalid", `{"cleanupPeriodDays": 30,}`, session.CleanupOptions{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := session.Home{Dir: t.TempDir()}
			if tc.settings != "" {
				if err := os.WriteFile(home.SettingsFile(), []byte(tc.settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := sweepOptions(home, filepath.Join(t.TempDir(), "proj"), now)()
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), home.SettingsFile()) {
					t.Fatalf("err = %v, want one naming %s", err, home.SettingsFile())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}
