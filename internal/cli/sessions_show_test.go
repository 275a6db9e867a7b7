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

	"github.com/cairn-dev/cairn/internal/cli"
)

// run executes the command line in-process and returns exit code, stdout
// and stderr.
func run(t *testing.T, home, cwd string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string {
			if k == "CAIRN_HOME" {
				return home
			}
			return ""
		},
		Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		Cwd: cwd,
	}
	code := cli.Run(context.Background(), args, env)
	return code, out.String(), errb.String()
}

const sample = "../../transcript/testdata/cc-2.1.197-manual-compact.jsonl"

// installSample copies the Claude Code sample into a home as its project's
// session and returns the home and the session id.
func installSample(t *testing.T) (home, id string) {
	t.Helper()
	home = t.TempDir()
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "projects", "-home-user-proj197")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id = "0ce29c1b-1cb1-464f-a89e-ec36d073cc93"
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, id
}

func TestSessionsShow(t *testing.T) {
	home, id := installSample(t)
	for _, ref := range []string{id, sample} {
		t.Run(filepath.Base(ref), func(t *testing.T) {
			code, out, errOut := run(t, home, "/elsewhere", "sessions", "show", ref, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got struct {
				SessionID string `json:"sessionId"`
				Messages  []struct {
					Role    string            `json:"role"`
					Content []json.RawMessage `json:"content"`
				} `json:"messages"`
				Warnings []string `json:"warnings"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not one JSON document: %v\n%s", err, out)
			}
			if got.SessionID != id || got.Warnings == nil || len(got.Warnings) != 0 {
				t.Errorf("sessionId %q warnings %v", got.SessionID, got.Warnings)
			}
			roles := ""
			for _, m := range got.Messages {
				roles += m.Role[:1]
			}
			if roles != "uauaua" {
				t.Errorf("roles %q, want uauaua (summary, kept reply, …)", roles)
			}
			if strings.Contains(out, `\u003c`) {
				t.Error("output escapes < as \\u003c; Claude Code's shape keeps it")
			}
		})
	}
	code, out, _ := run(t, home, "/elsewhere", "sessions", "show", id)
	if code != 0 || !strings.Contains(out, "── assistant ──") || !strings.Contains(out, "PEER-TASK-3") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}

func TestSessionsShowErrors(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown id", []string{"sessions", "show", "nope"}, 1, "sessions list --all"},
		{"missing file", []string{"sessions", "show", "/no/such.jsonl"}, 1, "no such file"},
		{"no argument", []string{"sessions", "show"}, 2, "accepts 1 arg"},
		{"unknown flag", []string{"sessions", "show", "x", "--bogus"}, 2, "unknown flag"},
		{"bad export format", []string{"sessions", "export", "x", "--format", "pdf"}, 2, "md or json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, home, "/p", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}

func TestSessionsExport(t *testing.T) {
	home, id := installSample(t)
	code, md, errOut := run(t, home, "/p", "sessions", "export", id)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The scroll-back holds what the resume view drops, in order.
	order := []string{"PEER-TASK-1", "**Edit**", "PEER-TASK-2", "Conversation compacted (manual, 20903 tokens before)", "## Summary", "`/compact`", "*Re-read notes.txt*", "PEER-TASK-3", "OK (fake default reply)."}
	pos := 0
	for _, s := range order {
		i := strings.Index(md[pos:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", s, md)
		}
		pos += i
	}
	if n := strings.Count(md, "Second task done: notes.txt updated."); n != 1 {
		t.Errorf("the preserved reply appears %d times, want once", n)
	}
	code, js, _ := run(t, home, "/p", "sessions", "export", id, "--format", "json")
	var doc struct {
		Entries []map[string]any `json:"entries"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &doc) != nil || len(doc.Entries) < 40 {
		t.Errorf("json export: exit %d, %d entries", code, len(doc.Entries))
	}
}
