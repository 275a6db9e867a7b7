package cli_test

import (
	"net"
	"strings"
	"testing"
)

// TestRefusedConnectionGivesUp: with nothing listening at the API's
// address, -p gives up after a bounded number of refused attempts (some
// 8 s of waits, not the 74 s every attempt would take) and says what to
// check.
func TestRefusedConnectionGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p := newProject(t)
	p.env = append(p.env, "ANTHROPIC_BASE_URL=http://"+addr)
	code, _, errOut := p.cairn(t, "-p", "hello")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "nothing is listening at the API's address") || !strings.Contains(errOut, "ANTHROPIC_BASE_URL") {
		t.Errorf("stderr does not say the connection was refused and what to check:\n%s", errOut)
	}
	if n := strings.Count(errOut, "retrying in"); n != 4 {
		t.Errorf("%d retries, want 4 (the 5th wait would pass 15 s):\n%s", n, errOut)
	}
}

// TestSessionsTrashThroughBinary: `cairn sessions trash` with nothing in
// the trash says so and exits 0; --json is an empty list.
func TestSessionsTrashThroughBinary(t *testing.T) {
	p := newProject(t)
	if code, out, e := p.cairn(t, "sessions", "trash"); code != 0 || !strings.HasPrefix(out, "The trash is empty") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, e)
	}
	if code, out, e := p.cairn(t, "sessions", "trash", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("--json: exit %d, stdout %q, stderr %q", code, out, e)
	}
}
