package cli_test

import (
	"strings"
	"testing"
	"time"
)

// TestSessionIDPrefixes: every command that takes a session id takes the
// first characters of one, and says which sessions match when several do.
func TestSessionIDPrefixes(t *testing.T) {
	home := sessHome(t)
	const twin = "11112222-3333-4444-8555-666666666666" // shares "1111" with sessID1
	sessWrite(t, home, "/work/app", twin, sessNow.Add(-time.Hour), sessNow.Add(-time.Hour), "another")
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // a part of stdout
		stderr string // a part of stderr
	}{
		{args: []string{"sessions", "show", "111111", "--json"}, stdout: `"sessionId":"` + sessID1},
		{args: []string{"sessions", "export", "11111111"}, stdout: "add a login page"},
		{args: []string{"context", "111111", "--json"}, stdout: `"sessionId":"` + sessID1},
		{args: []string{"sessions", "show", "bbbb", "--json"}, stdout: `"sessionId":"` + sessID3}, // another project's
		{args: []string{"sessions", "show", "1111"}, code: 1, stderr: `"1111" is the start of 2 session ids; give more of the id:`},
		{args: []string{"sessions", "export", "1111"}, code: 1, stderr: twin},
		{args: []string{"context", "1111"}, code: 1, stderr: sessID1},
		{args: []string{"sessions", "rewind", "1111", "--to", "x"}, code: 1, stderr: twin},
		{args: []string{"-r", "1111", "-p", "hi"}, code: 1, stderr: twin},
		{args: []string{"sessions", "show", "9999"}, code: 1, stderr: `no session with id "9999"`},
	} {
		r := sessRun(t, home, "/work/app", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("cairn %q: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", tc.args, r.code, tc.code, r.stdout, tc.stdout, r.stderr, tc.stderr)
		}
	}
}

// TestContextWithoutID: `cairn context` measures this project's newest
// session; with none, it says how to start one.
func TestContextWithoutID(t *testing.T) {
	home := sessHome(t)
	r := sessRun(t, home, "/work/app", "context", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"sessionId":"`+sessID1) { // newer than sessID2
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = sessRun(t, home, "/work/none", "context")
	if r.code != 1 || !strings.Contains(r.stderr, "no transcript in the project folder") {
		t.Errorf("no session: exit %d, stderr %q", r.code, r.stderr)
	}
}
