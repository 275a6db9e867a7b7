package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/session"
)

func TestSessionsRestore(t *testing.T) {
	home := sessHome(t)
	path := filepath.Join(session.Home{Dir: home}.ProjectDir("/work/app"), sessID2+".jsonl")
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if r := sessRun(t, home, "/work/app", "sessions", "cleanup"); r.code != 0 {
		t.Fatalf("cleanup: exit %d: %s", r.code, r.stderr)
	}

	// The trash lists what can be restored, and where it goes back.
	r := sessRun(t, home, "/work/app", "sessions", "trash")
	if r.code != 0 || !strings.Contains(r.stdout, sessID2+"  trashed ") || !strings.Contains(r.stdout, "    "+path+"\n") || !strings.Contains(r.stdout, "cairn sessions restore ID") {
		t.Errorf("sessions trash: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = sessRun(t, home, "/work/app", "sessions", "trash", "--json")
	var trash []struct {
		SessionID  string
		Path       string
		Restorable bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &trash); err != nil || !slices.ContainsFunc(trash, func(e struct {
		SessionID  string
		Path       string
		Restorable bool
	}) bool {
		return e.SessionID == sessID2 && e.Path == path && e.Restorable
	}) {
		t.Errorf("sessions trash --json: %v\n%s", err, r.stdout)
	}

	r = sessRun(t, home, "/work/app", "sessions", "restore", sessID2[:8])
	if r.code != 0 || r.stdout != "Restored "+sessID2+" to "+path+"\n" {
		t.Fatalf("restore: exit %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(content) {
		t.Errorf("restored transcript differs: %v", err)
	}
	r = sessRun(t, home, "/work/app", "sessions", "list", "--json")
	if !strings.Contains(r.stdout, sessID2) {
		t.Errorf("the restored session is not listed:\n%s", r.stdout)
	}
	// Restoring counts as use: the next cleanup keeps it.
	r = sessRun(t, home, "/work/app", "sessions", "cleanup", "--dry-run", "--json")
	if strings.Contains(r.stdout, sessID2) {
		t.Errorf("the next cleanup would take the restored session again:\n%s", r.stdout)
	}

	if r := sessRun(t, home, "/work/app", "sessions", "trash"); strings.Contains(r.stdout, sessID2) {
		t.Errorf("the restored session is still listed in the trash:\n%s", r.stdout)
	}
	r = sessRun(t, home, "/work/app", "sessions", "restore", sessID2)
	if r.code != 1 || !strings.Contains(r.stderr, "no such session in the trash") || !strings.Contains(r.stderr, "cairn sessions trash") {
		t.Errorf("restoring twice: exit %d, %q; want 1", r.code, r.stderr)
	}
	for _, args := range [][]string{{"sessions", "restore"}, {"sessions", "restore", "a", "b"}} {
		if r := sessRun(t, home, "/work/app", args...); r.code != 2 {
			t.Errorf("%q: exit %d; want 2", args, r.code)
		}
	}
}
