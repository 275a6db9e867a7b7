package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

func TestSessionsCleanup(t *testing.T) {
	t.Run("dry run json", func(t *testing.T) {
		home := sessHome(t)
		old := filepath.Join(session.Home{Dir: home}.ProjectDir("/work/app"), sessID2+".jsonl")
		r := sessRun(t, home, "/work/app", "sessions", "cleanup", "--dry-run", "--json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
			t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
		}
		for _, k := range []string{"trashed", "kept", "purged", "errors"} {
			if _, ok := raw[k].([]any); !ok {
				t.Errorf("%q = %v; want a list", k, raw[k])
			}
		}
		var rep session.CleanupReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if !rep.DryRun || len(rep.Trashed) != 1 || rep.Trashed[0].SessionID != sessID2 || rep.Trashed[0].Path != old {
			t.Errorf("report %+v; want %s to go", rep, sessID2)
		}
		if _, err := os.Stat(old); err != nil {
			t.Errorf("a dry run moved %s: %v", old, err)
		}
	})

	t.Run("text", func(t *testing.T) {
		home := sessHome(t)
		r := sessRun(t, home, "/work/app", "sessions", "cleanup")
		want := "Moved 1 session to the trash (bring one back with `cairn sessions restore ID`):\n" +
			"  " + sessID2 + "  last active 2027-01-10  " +
			filepath.Join(session.Home{Dir: home}.ProjectDir("/work/app"), sessID2+".jsonl") + "\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("exit %d, output:\n%s\nwant:\n%s", r.code, r.stdout, want)
		}
		r = sessRun(t, home, "/work/app", "sessions", "cleanup")
		if r.code != 0 || r.stdout != "Nothing to clean up: no session has been idle since before 2027-01-30.\n" {
			t.Errorf("second run: exit %d, %q", r.code, r.stdout)
		}
	})

	t.Run("older than, in use", func(t *testing.T) {
		home := sessHome(t)
		app, err := transcript.NewFileStore(session.Home{Dir: home}.ProjectDir("/work/lib")).OpenAppender(context.Background(), sessID3)
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		r := sessRun(t, home, "/work/app", "sessions", "cleanup", "--older-than", "0", "--json")
		var rep session.CleanupReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Fatalf("exit %d, %v: %s", r.code, err, r.stderr)
		}
		var trashed []string
		for _, s := range rep.Trashed {
			trashed = append(trashed, s.SessionID)
		}
		if diff := cmp.Diff([]string{sessID1, sessID2}, trashed); diff != "" {
			t.Errorf("trashed (-want +got):\n%s", diff)
		}
		if len(rep.Kept) != 1 || rep.Kept[0].SessionID != sessID3 || rep.Kept[0].Reason != session.KeptInUse {
			t.Errorf("kept = %+v; want %s, in use", rep.Kept, sessID3)
		}
	})

	t.Run("settings", func(t *testing.T) {
		home := sessHome(t)
		settings := filepath.Join(home, "settings.json")
		if err := os.WriteFile(settings, []byte(`{"cleanupPeriodDays": 60}`), 0o600); err != nil {
			t.Fatal(err)
		}
		r := sessRun(t, home, "/work/app", "sessions", "cleanup", "--json")
		var rep session.CleanupReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || len(rep.Trashed) != 0 {
			t.Errorf("with cleanupPeriodDays 60: exit %d, %v, %+v; want nothing trashed", r.code, err, rep)
		}
		if err := os.WriteFile(settings, []byte(`{"cleanupPeriodDays": 60`), 0o600); err != nil {
			t.Fatal(err)
		}
		r = sessRun(t, home, "/work/app", "sessions", "cleanup")
		if r.code != 1 || !strings.Contains(r.stderr, settings) || r.stdout != "" {
			t.Errorf("broken settings: exit %d, stderr %q; want 1 naming %s", r.code, r.stderr, settings)
		}
	})

	t.Run("usage", func(t *testing.T) {
		home := sessHome(t)
		for _, args := range [][]string{
			{"sessions", "cleanup", "--older-than", "-1"},
			{"sessions", "cleanup", "--older-than", "soon"},
			{"sessions", "cleanup", "extra"},
		} {
			if r := sessRun(t, home, "/work/app", args...); r.code != 2 {
				t.Errorf("%q: exit %d; want 2 (%s)", args, r.code, r.stderr)
			}
		}
	})
}
