package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/cli"
	"github.com/cairn-dev/cairn/session"
)

// sessNow is the clock of the session-management tests.
var sessNow = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

type sessResult struct {
	code           int
	stdout, stderr string
}

// sessRun runs cairn in-process with the given home, working directory
// and clock.
func sessRun(t *testing.T, home, cwd string, args ...string) sessResult {
	t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "CAIRN_HOME" {
				return home
			}
			return ""
		},
		Now: func() time.Time { return sessNow },
		Cwd: cwd,
	}
	code := cli.Run(context.Background(), args, env)
	return sessResult{code, out.String(), errb.String()}
}

// sessWrite writes a transcript of one prompt-and-answer exchange per
// prompt, stamped from at on, with the given file modification time.
func sessWrite(t *testing.T, home, cwd, id string, at, mtime time.Time, prompts ...string) string {
	t.Helper()
	var b bytes.Buffer
	parent := any(nil)
	for i, p := range prompts {
		ts := at.Add(time.Duration(i) * time.Minute).Format("2006-01-02T15:04:05.000Z")
		u, a := fmt.Sprintf("%s-u%d", id[:8], i), fmt.Sprintf("%s-a%d", id[:8], i)
		for _, line := range []map[string]any{
			{"parentUuid": parent, "isSidechain": false, "type": "user", "message": map[string]any{"role": "user", "content": p},
				"uuid": u, "timestamp": ts, "cwd": cwd, "sessionId": id},
			{"parentUuid": u, "isSidechain": false, "type": "assistant", "message": map[string]any{"role": "assistant",
				"content": []any{map[string]any{"type": "text", "text": "Answer to " + p}}}, "uuid": a, "timestamp": ts, "cwd": cwd, "sessionId": id},
			{"type": "last-prompt", "lastPrompt": p, "leafUuid": a, "sessionId": id},
		} {
			j, err := json.Marshal(line)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(append(j, '\n'))
		}
		parent = a
	}
	path := filepath.Join(session.Home{Dir: home}.ProjectDir(cwd), id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	sessID1 = "11111111-2222-4333-8444-555555555555"
	sessID2 = "66666666-7777-4888-9999-aaaaaaaaaaaa"
	sessID3 = "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff"
)

// sessHome makes a home with two sessions in /work/app and one in
// /work/lib.
func sessHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	sessWrite(t, home, "/work/app", sessID1, sessNow.Add(-3*time.Hour), sessNow.Add(-2*time.Hour), "add a login page", "style it")
	sessWrite(t, home, "/work/app", sessID2, sessNow.Add(-50*24*time.Hour), sessNow.Add(-40*24*time.Hour), "fix the build")
	sessWrite(t, home, "/work/lib", sessID3, sessNow.Add(-time.Hour), sessNow.Add(-time.Minute), "publish v2")
	return home
}

func TestSessionsListJSON(t *testing.T) {
	home := sessHome(t)
	for _, tc := range []struct {
		name string
		cwd  string
		args []string
		want []string // session ids in order
	}{
		{"project", "/work/app", nil, []string{sessID1, sessID2}},
		{"all", "/work/app", []string{"--all"}, []string{sessID3, sessID1, sessID2}},
		{"empty", "/work/none", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sessRun(t, home, tc.cwd, append([]string{"sessions", "list", "--json"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got []map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
			}
			if len(tc.want) == 0 && strings.TrimSpace(r.stdout) != "[]" {
				t.Errorf("an empty listing printed %q; want []", r.stdout)
			}
			ids := []string{}
			for _, s := range got {
				ids = append(ids, s["sessionId"].(string))
				keys := make([]string, 0, len(s))
				for k := range s {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				if diff := cmp.Diff([]string{"bytes", "created", "firstPrompt", "lastPrompt", "messages", "modified", "path", "project", "sessionId"}, keys); diff != "" {
					t.Errorf("keys (-want +got):\n%s", diff)
				}
				for _, k := range []string{"created", "modified"} {
					v, _ := s[k].(string)
					if ts, err := time.Parse(time.RFC3339, v); err != nil || !strings.HasSuffix(v, "Z") || ts.IsZero() {
						t.Errorf("%s = %q; want an RFC 3339 UTC time", k, v)
					}
				}
			}
			if diff := cmp.Diff(tc.want, ids); diff != "" {
				t.Errorf("sessions (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("fields", func(t *testing.T) {
		r := sessRun(t, home, "/work/app", "sessions", "list", "--json")
		var got []session.Info
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		first := got[0]
		first.Bytes, first.Path = 0, ""
		want := session.Info{
			SessionID: sessID1, Project: "/work/app", Created: sessNow.Add(-3 * time.Hour),
			Modified: sessNow.Add(-2 * time.Hour), Messages: 4,
			FirstPrompt: "add a login page", LastPrompt: "style it",
		}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("first session (-want +got):\n%s", diff)
		}
	})
}

func TestSessionsListText(t *testing.T) {
	home := sessHome(t)
	for _, tc := range []struct {
		name, cwd string
		args      []string
		want      string
	}{
		{"project", "/work/app", nil, "" +
			"ID        MODIFIED    MSGS  SIZE   FIRST PROMPT\n" +
			"11111111  2h ago      4     1 KB   add a login page\n" +
			"66666666  2027-01-20  2     652 B  fix the build\n"},
		{"all", "/work/app", []string{"--all"}, "" +
			"ID        MODIFIED    MSGS  SIZE   PROJECT    FIRST PROMPT\n" +
			"bbbbbbbb  1m ago      2     643 B  /work/lib  publish v2\n" +
			"11111111  2h ago      4     1 KB   /work/app  add a login page\n" +
			"66666666  2027-01-20  2     652 B  /work/app  fix the build\n"},
		{"none", "/work/none", nil,
			"No sessions for /work/none yet; `cairn sessions list --all` shows every project's.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sessRun(t, home, tc.cwd, append([]string{"sessions", "list"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if diff := cmp.Diff(tc.want, r.stdout); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionsListUsage(t *testing.T) {
	home := sessHome(t)
	for _, args := range [][]string{
		{"sessions", "list", "extra"},
		{"sessions", "list", "--bogus"},
	} {
		if r := sessRun(t, home, "/work/app", args...); r.code != 2 {
			t.Errorf("%q: exit %d; want 2 (%s)", args, r.code, r.stderr)
		}
	}
}
