package filehistory

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// twoTurns runs two turns of edits and returns the project's state when
// each message was sent and at the end.
func twoTurns(t *testing.T, f *fixture) (atM1, atM2, end map[string]string) {
	t.Helper()
	f.write(t, "main.go", "package main\n\nfunc main() {}\n", 0o644)
	f.write(t, "run.sh", "#!/bin/sh\n", 0o755)
	f.write(t, "old.txt", "old\n", 0o644)
	atM1 = tree(t, f.project)

	f.prompt(t, "m1")
	f.edit(t, "main.go", "package main\n\nfunc main() {\n\tprintln(1)\n}\n")
	f.edit(t, "made.txt", "made in turn 1\n")
	atM2 = tree(t, f.project)

	f.prompt(t, "m2")
	f.edit(t, "main.go", "package main\n")
	f.edit(t, "run.sh", "#!/bin/sh\necho hi\n")
	os.Chmod(f.path("run.sh"), 0o700)
	f.edit(t, "later.txt", "made in turn 2\n")
	if err := f.h.BeforeChange(f.path("old.txt")); err != nil {
		t.Fatal(err)
	}
	os.Remove(f.path("old.txt"))
	end = tree(t, f.project)
	return atM1, atM2, end
}

func TestPlanAndRewind(t *testing.T) {
	f := newFixture(t)
	atM1, atM2, end := twoTurns(t, f)

	p, err := f.h.Plan("m2")
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: f.path("later.txt"), Action: Delete, Added: 0, Removed: 1},
		{Path: f.path("main.go"), Action: Restore, Backup: BackupName(f.path("main.go"), 2), Added: 4, Removed: 0},
		{Path: f.path("old.txt"), Action: Recreate, Backup: BackupName(f.path("old.txt"), 1), Added: 1},
		{Path: f.path("run.sh"), Action: Restore, Backup: BackupName(f.path("run.sh"), 1), Added: 0, Removed: 1},
	}
	if d := cmp.Diff(want, p.Changes); d != "" {
		t.Errorf("plan to m2 (-want +got):\n%s", d)
	}
	// Planning changes nothing.
	if d := cmp.Diff(end, tree(t, f.project)); d != "" {
		t.Fatalf("Plan changed the project (-before +after):\n%s", d)
	}

	if _, err := f.h.Rewind(context.Background(), "m2", "undo-1"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(atM2, tree(t, f.project)); d != "" {
		t.Errorf("after rewinding to m2 (-want +got):\n%s", d)
	}
	// Again to the first message: the file made in turn 1 goes too.
	if _, err := f.h.Rewind(context.Background(), "m1", "undo-2"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(atM1, tree(t, f.project)); d != "" {
		t.Errorf("after rewinding to m1 (-want +got):\n%s", d)
	}
	// The rewinds themselves can be rewound.
	if _, err := f.h.Rewind(context.Background(), "undo-1", ""); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(end, tree(t, f.project)); d != "" {
		t.Errorf("after undoing the first rewind (-want +got):\n%s", d)
	}
	if _, err := f.h.Rewind(context.Background(), "undo-2", ""); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(atM2, tree(t, f.project)); d != "" {
		t.Errorf("after undoing the second rewind (-want +got):\n%s", d)
	}
	// Nothing to do: no undo snapshot is recorded.
	n := len(f.h.Snapshots())
	if p, err := f.h.Rewind(context.Background(), "undo-2", "undo-3"); err != nil || len(p.Changes) != 0 || len(f.h.Snapshots()) != n {
		t.Errorf("a rewind with nothing to do: %+v, %v, %d snapshots (was %d)", p, err, len(f.h.Snapshots()), n)
	}
}

func TestRewindErrors(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "a\n", 0o644)
	f.prompt(t, "m1")
	f.edit(t, "a.txt", "b\n")
	if _, err := f.h.Plan("nope"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("unknown message: %v", err)
	}
	// A lost backup is named, and the plan refuses rather than guess.
	os.Remove(filepath.Join(f.dir, BackupName(f.path("a.txt"), 1)))
	if _, err := f.h.Plan("m1"); err == nil || !bytes.Contains([]byte(err.Error()), []byte("cannot be rewound")) {
		t.Errorf("missing backup: %v", err)
	}
}

func TestRewindThroughSymlink(t *testing.T) {
	f := newFixture(t)
	f.write(t, "real.txt", "one\n", 0o644)
	if err := os.Symlink(f.path("real.txt"), f.path("link.txt")); err != nil {
		t.Skip(err)
	}
	f.prompt(t, "m1")
	f.edit(t, "link.txt", "two\n")
	if _, err := f.h.Rewind(context.Background(), "m1", ""); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(f.path("link.txt")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(f.path("real.txt")); string(b) != "one\n" {
		t.Errorf("target holds %q", b)
	}
}

func TestResumeAndFork(t *testing.T) {
	f := newFixture(t)
	_, atM2, end := twoTurns(t, f)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, f.rec.transcript(), 0o600); err != nil {
		t.Fatal(err)
	}

	// Resume: the same folder, the history rebuilt from the transcript;
	// nothing in the project changes.
	rec := &records{}
	h, err := Open(context.Background(), bytes.NewReader(f.rec.transcript()), f.project, f.dir, Options{Dir: f.dir, Record: rec.record})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.lines) != 0 {
		t.Errorf("resuming recorded %d snapshots again", len(rec.lines))
	}
	if d := cmp.Diff(end, tree(t, f.project)); d != "" {
		t.Fatalf("resuming changed the project:\n%s", d)
	}

	// Fork: the backups come along and the snapshots are recorded in the
	// new transcript.
	forkDir := filepath.Join(filepath.Dir(f.dir), "fork")
	frec := &records{}
	fh, err := Open(context.Background(), bytes.NewReader(f.rec.transcript()), f.project, f.dir, Options{Dir: forkDir, Record: frec.record})
	if err != nil {
		t.Fatal(err)
	}
	if len(frec.lines) != len(h.Snapshots()) {
		t.Errorf("the fork recorded %d snapshots, want %d", len(frec.lines), len(h.Snapshots()))
	}
	if d := cmp.Diff(tree(t, f.dir), tree(t, forkDir)); d != "" {
		t.Errorf("fork backups differ (-old +new):\n%s", d)
	}
	if _, err := fh.Rewind(context.Background(), "m2", ""); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(atM2, tree(t, f.project)); d != "" {
		t.Errorf("after rewinding the fork to m2 (-want +got):\n%s", d)
	}
	// A new turn in the resumed session shares the backups of what is
	// as it was, and numbers new ones after the old.
	if err := h.Prompt(context.Background(), "m3"); err != nil {
		t.Fatal(err)
	}
	s3, _ := h.Snapshot("m3")
	if b := s3.Files[f.path("main.go")]; b.Version != 2 {
		t.Errorf("main.go in m3: %+v, want the backup of m2 (version 2)", b)
	}
	f.write(t, "main.go", "package other\n", 0o644)
	if err := h.Prompt(context.Background(), "m4"); err != nil {
		t.Fatal(err)
	}
	s4, _ := h.Snapshot("m4")
	if b := s4.Files[f.path("main.go")]; b.Version != 3 || b.Name != BackupName(f.path("main.go"), 3) {
		t.Errorf("main.go in m4: %+v, want version 3", b)
	}
}

func TestCopyBackupsSkipsShadow(t *testing.T) {
	from, to := t.TempDir(), filepath.Join(t.TempDir(), "to")
	os.WriteFile(filepath.Join(from, "0123456789abcdef@v1"), []byte("x"), 0o600)
	os.MkdirAll(filepath.Join(from, "shadow"), 0o700)
	os.WriteFile(filepath.Join(from, ".tmp-1"), []byte("x"), 0o600)
	n, err := CopyBackups(from, to)
	if err != nil || n != 1 {
		t.Fatalf("CopyBackups = %d, %v", n, err)
	}
	if d := cmp.Diff(map[string]string{"0123456789abcdef@v1": "-rw------- x"}, tree(t, to)); d != "" {
		t.Error(d)
	}
	if n, err := CopyBackups(filepath.Join(from, "missing"), to); n != 0 || err != nil {
		t.Errorf("missing folder: %d, %v", n, err)
	}
}

func TestLineStat(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		added, remove int
		binary        bool
	}{
		{"same", "a\nb\n", "a\nb\n", 0, 0, false},
		{"one changed", "a\nb\nc\n", "a\nB\nc\n", 1, 1, false},
		{"appended", "a\n", "a\nb\nc\n", 2, 0, false},
		{"no final newline", "a", "", 0, 1, false},
		{"binary", "a\x00b", "a", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, r, bin := lineStat([]byte(tc.before), []byte(tc.after))
			if a != tc.added || r != tc.remove || bin != tc.binary {
				t.Errorf("lineStat = +%d -%d binary %v, want +%d -%d %v", a, r, bin, tc.added, tc.remove, tc.binary)
			}
		})
	}
}

// TestRewindFaults: files changed behind the history's back since their
// backups were made.
func TestRewindFaults(t *testing.T) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.write(t, "a.txt", "one\n", 0o644)
		f.write(t, "sub/b.txt", "bee\n", 0o644)
		f.prompt(t, "m1")
		f.edit(t, "a.txt", "two\n")
		f.edit(t, "sub/b.txt", "BEE\n")
		return f
	}
	t.Run("deleted since", func(t *testing.T) {
		f := setup(t)
		os.Remove(f.path("a.txt"))
		os.RemoveAll(f.path("sub"))
		p, err := f.h.Rewind(context.Background(), "m1", "undo")
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 2 || p.Changes[0].Action != Recreate || p.Changes[1].Action != Recreate {
			t.Errorf("plan %+v, want both recreated", p.Changes)
		}
		if d := cmp.Diff(map[string]string{"a.txt": "-rw-r--r-- one\n", "sub/b.txt": "-rw-r--r-- bee\n"}, tree(t, f.project)); d != "" {
			t.Errorf("after the rewind (-want +got):\n%s", d)
		}
	})
	t.Run("made read-only since", func(t *testing.T) {
		f := setup(t)
		os.Chmod(f.path("a.txt"), 0o444)
		if _, err := f.h.Rewind(context.Background(), "m1", "undo"); err != nil {
			t.Fatal(err)
		}
		// The content and the mode come back as they were at m1.
		if got := tree(t, f.project)["a.txt"]; got != "-rw-r--r-- one\n" {
			t.Errorf("a.txt = %q", got)
		}
	})
	t.Run("folder made read-only since", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes to read-only folders")
		}
		f := setup(t)
		os.Chmod(f.path("sub"), 0o555)
		defer os.Chmod(f.path("sub"), 0o755)
		_, err := f.h.Rewind(context.Background(), "m1", "undo")
		if err == nil || !strings.Contains(err.Error(), "sub/b.txt") || !strings.Contains(err.Error(), "chmod u+w") {
			t.Errorf("err = %v, want one naming sub/b.txt and saying how to fix it", err)
		}
		// What could be rewound was.
		if b, _ := os.ReadFile(f.path("a.txt")); string(b) != "one\n" {
			t.Errorf("a.txt = %q; one file's failure must not stop the others", b)
		}
	})
}
