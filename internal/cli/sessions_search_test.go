package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/session"
)

func TestSessionsSearch(t *testing.T) {
	home := sessHome(t)
	for _, tc := range []struct {
		name string
		args []string
		want []session.Match // Path left out
	}{
		{"project", []string{"LOGIN"}, []session.Match{
			{SessionID: sessID1, UUID: "11111111-u0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "add a login page"},
			{SessionID: sessID1, UUID: "11111111-a0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "Answer to add a login page"},
		}},
		{"all", []string{"publish", "--all"}, []session.Match{
			{SessionID: sessID3, UUID: "bbbbbbbb-u0", Timestamp: sessNow.Add(-time.Hour), Snippet: "publish v2"},
			{SessionID: sessID3, UUID: "bbbbbbbb-a0", Timestamp: sessNow.Add(-time.Hour), Snippet: "Answer to publish v2"},
		}},
		{"not in this project", []string{"publish"}, []session.Match{}},
		{"several words unquoted", []string{"login", "page"}, []session.Match{
			{SessionID: sessID1, UUID: "11111111-u0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "add a login page"},
			{SessionID: sessID1, UUID: "11111111-a0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "Answer to add a login page"},
		}},
		{"several words quoted", []string{"login page"}, []session.Match{
			{SessionID: sessID1, UUID: "11111111-u0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "add a login page"},
			{SessionID: sessID1, UUID: "11111111-a0", Timestamp: sessNow.Add(-3 * time.Hour), Snippet: "Answer to add a login page"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sessRun(t, home, "/work/app", append([]string{"sessions", "search", "--json"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var raw []map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
			}
			if raw == nil {
				t.Fatalf("printed %q; want a list, [] when empty", r.stdout)
			}
			for _, m := range raw {
				if len(m) != 5 || m["sessionId"] == nil || m["path"] == nil || m["uuid"] == nil || m["timestamp"] == nil || m["snippet"] == nil {
					t.Errorf("match %v; want exactly sessionId, path, uuid, timestamp, snippet", m)
				}
				if ts, _ := m["timestamp"].(string); !strings.HasSuffix(ts, "Z") {
					t.Errorf("timestamp %q; want RFC 3339 UTC", ts)
				}
			}
			var got []session.Match
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i].Path = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("text", func(t *testing.T) {
		r := sessRun(t, home, "/work/app", "sessions", "search", "build")
		want := "" +
			"66666666  2027-01-10 12:00  fix the build\n" +
			"66666666  2027-01-10 12:00  Answer to fix the build\n" +
			"2 matches in 1 session.\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("exit %d, output:\n%s\nwant:\n%s", r.code, r.stdout, want)
		}
		r = sessRun(t, home, "/work/app", "sessions", "search", "zebra")
		if r.code != 0 || r.stdout != "No matches for \"zebra\".\n" {
			t.Errorf("no matches: exit %d, %q", r.code, r.stdout)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"sessions", "search"},
			{"sessions", "search", "  "},
			{"sessions", "search", "a", "--bogus"},
		} {
			if r := sessRun(t, home, "/work/app", args...); r.code != 2 {
				t.Errorf("%q: exit %d; want 2 (%s)", args, r.code, r.stderr)
			}
		}
	})
}
