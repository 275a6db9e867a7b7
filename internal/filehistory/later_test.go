package filehistory

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/transcript"
)

// TestOpenLater: a history whose snapshots are still being read takes a
// prompt at once, without waiting for them or recording anything; the
// prompt's snapshot is taken once they are in, from the files they
// track, and recorded after them. A change meanwhile waits for them, so
// its version continues theirs.
func TestOpenLater(t *testing.T) {
	dir, proj := t.TempDir(), t.TempDir()
	kept, changed := filepath.Join(proj, "kept.go"), filepath.Join(proj, "changed.go")
	os.WriteFile(changed, []byte("package p\n"), 0o644)
	var mu sync.Mutex
	var recorded []string
	release := make(chan struct{})
	h, _ := OpenLater(t.Context(), "", Options{Dir: dir, Record: func(_ context.Context, e transcript.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		var id string
		json.Unmarshal(e.Extra["messageId"], &id)
		recorded = append(recorded, id)
		return nil
	}}, func() ([]Snapshot, []string, error) {
		<-release
		return []Snapshot{{MessageID: "u1", Files: map[string]Backup{
			kept:    {Version: 1},               // did not exist, and still does not
			changed: {Name: "x@v3", Version: 3}, // its backup is gone: backed up again
		}}}, []string{"line 9: damaged; skipped"}, nil
	})
	defer h.Close()

	done := make(chan error, 1)
	go func() { done <- h.Prompt(t.Context(), "u2") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Prompt waited for the snapshots")
	}
	changedDone := make(chan error, 1)
	go func() { changedDone <- h.BeforeChange(filepath.Join(proj, "new.go")) }()
	select {
	case <-changedDone:
		t.Fatal("BeforeChange did not wait for the snapshots")
	case <-time.After(50 * time.Millisecond):
	}
	mu.Lock()
	if len(recorded) != 0 {
		t.Errorf("recorded %q before the snapshots were in", recorded)
	}
	mu.Unlock()

	close(release)
	if err := <-changedDone; err != nil {
		t.Fatal(err)
	}
	snaps := h.Snapshots()
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.MessageID)
	}
	if !slices.Equal(ids, []string{"u1", "u2"}) {
		t.Fatalf("snapshots %q, want u1 then u2", ids)
	}
	u2 := snaps[1].Files
	if b, ok := u2[kept]; !ok || b.Version != 1 {
		t.Errorf("u2 has %s as %+v, want it as u1 left it", kept, b)
	}
	if b := u2[changed]; b.Version != 4 || !b.Exists() {
		t.Errorf("u2 has %s as %+v, want a new backup, version 4", changed, b)
	}
	if b := u2[filepath.Join(proj, "new.go")]; b.Version != 1 {
		t.Errorf("the change made while the snapshots were read gave %+v", b)
	}
	mu.Lock()
	if len(recorded) == 0 || recorded[0] != "u2" {
		t.Errorf("recorded %q, want u2's snapshot first", recorded)
	}
	mu.Unlock()
}

// TestOpenLaterFailed: snapshots that cannot be read turn the history off
// with a warning (the records' warnings are given as Load's are): a
// prompt meanwhile or after takes no snapshot and records nothing, so no
// snapshot that leaves out the files the unread ones track is written.
func TestOpenLaterFailed(t *testing.T) {
	var mu sync.Mutex
	var warnings []string
	recorded := 0
	proj := t.TempDir()
	release := make(chan struct{})
	h, _ := OpenLater(t.Context(), "", Options{Dir: t.TempDir(),
		Record: func(context.Context, transcript.Entry) error { recorded++; return nil },
		Warn: func(s string) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, s)
		}}, func() ([]Snapshot, []string, error) {
		<-release
		return nil, []string{"line 9: damaged; skipped"}, errors.New("read file-history snapshots: input/output error")
	})
	if err := h.Prompt(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := h.Prompt(t.Context(), "u2"); err != nil {
		t.Fatal(err)
	}
	if err := h.BeforeChange(filepath.Join(proj, "a.go")); err != nil {
		t.Fatal(err)
	}
	if s := h.Snapshots(); len(s) != 0 || recorded != 0 {
		t.Errorf("snapshots %+v, %d recorded; want none", s, recorded)
	}
	h.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 2 || !strings.Contains(warnings[0], "line 9") || !strings.Contains(warnings[1], "file history is off") || !strings.Contains(warnings[1], "input/output error") {
		t.Errorf("warnings %q", warnings)
	}
}

// TestBackupNeverReplacesOne: a backup whose version's file is in the
// folder already (a snapshot the history does not hold named it) takes
// the next free version, by a change and by a prompt's capture alike.
func TestBackupNeverReplacesOne(t *testing.T) {
	dir, proj := t.TempDir(), t.TempDir()
	path := filepath.Join(proj, "a.go")
	os.WriteFile(path, []byte("new\n"), 0o644)
	for v := 1; v <= 2; v++ {
		os.WriteFile(filepath.Join(dir, BackupName(path, v)), []byte("old\n"), 0o644)
	}
	h := New(Options{Dir: dir}, nil)
	if err := h.Prompt(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}
	if err := h.BeforeChange(path); err != nil {
		t.Fatal(err)
	}
	s, _ := h.Snapshot("u1")
	if b := s.Files[path]; b.Version != 3 {
		t.Errorf("the backup took version %d, want 3", b.Version)
	}
	for v := 1; v <= 2; v++ {
		if b, _ := os.ReadFile(filepath.Join(dir, BackupName(path, v))); string(b) != "old\n" {
			t.Errorf("version %d's backup now holds %q", v, b)
		}
	}
}
