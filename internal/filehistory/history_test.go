package filehistory

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// records collects the transcript records a History writes, as lines.
type records struct {
	mu    sync.Mutex
	lines [][]byte
}

func (r *records) record(_ context.Context, e transcript.Entry) error {
	b, err := e.MarshalJSON()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.lines = append(r.lines, b)
	r.mu.Unlock()
	return nil
}

// transcript returns the records as a transcript file's bytes.
func (r *records) transcript() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(bytes.Join(r.lines, []byte("\n")), '\n')
}

// entries decodes the records back, as a reader of the transcript would.
func (r *records) entries(t *testing.T) []transcript.Entry {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []transcript.Entry
	for _, l := range r.lines {
		e, err := transcript.DecodeEntry(l)
		if err != nil {
			t.Fatalf("record %s: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// clock is a deterministic clock: each reading is a second later.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

type fixture struct {
	dir, project string
	h            *History
	rec          *records
	warnings     []string
	mu           sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: filepath.Join(t.TempDir(), "file-history", "sess"), project: t.TempDir(), rec: &records{}}
	f.h = New(f.options(), nil)
	return f
}

func (f *fixture) options() Options {
	return Options{Dir: f.dir, Record: f.rec.record, Now: newClock().now, Warn: func(s string) {
		f.mu.Lock()
		f.warnings = append(f.warnings, s)
		f.mu.Unlock()
	}}
}

func (f *fixture) path(name string) string { return filepath.Join(f.project, name) }

func (f *fixture) write(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	p := f.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// edit changes a file as an editing tool does: BeforeChange, then write.
func (f *fixture) edit(t *testing.T, name, content string) {
	t.Helper()
	if err := f.h.BeforeChange(f.path(name)); err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(f.path(name)); err == nil {
		mode = fi.Mode().Perm()
	}
	f.write(t, name, content, mode)
}

func (f *fixture) prompt(t *testing.T, id string) {
	t.Helper()
	if err := f.h.Prompt(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// tree returns every file under dir with its content and mode.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fi.Mode().Perm().String() + " " + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBackupName(t *testing.T) {
	// The first 16 hex digits of sha256("/home/user/proj/src/main.go"),
	// computed with sha256sum.
	if got, want := BackupName("/home/user/proj/src/main.go", 3), "fbc4f7e1e9b52894@v3"; got != want {
		t.Errorf("BackupName = %q, want %q", got, want)
	}
}

func TestBackupsAndVersions(t *testing.T) {
	f := newFixture(t)
	f.write(t, "run.sh", "#!/bin/sh\necho one\n", 0o755)
	script := f.path("run.sh")
	fresh := f.path("sub/new.txt")

	f.prompt(t, "m1")
	f.edit(t, "run.sh", "#!/bin/sh\necho two\n")
	f.edit(t, "run.sh", "#!/bin/sh\necho three\n") // the same turn: no second backup
	f.edit(t, "sub/new.txt", "made\n")

	s1, _ := f.h.Snapshot("m1")
	want1 := map[string]Backup{
		script: {Name: BackupName(script, 1), Version: 1},
		fresh:  {Version: 1},
	}
	if d := cmp.Diff(want1, s1.Files, cmp.Comparer(sameBackup)); d != "" {
		t.Errorf("snapshot m1 (-want +got):\n%s", d)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, BackupName(script, 1)))
	if err != nil || string(b) != "#!/bin/sh\necho one\n" {
		t.Errorf("backup v1 = %q, %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(f.dir, BackupName(script, 1))); fi.Mode().Perm() != 0o755 {
		t.Errorf("backup mode %v, want the file's 0755", fi.Mode().Perm())
	}

	// The next message backs up what changed during the turn.
	f.prompt(t, "m2")
	s2, _ := f.h.Snapshot("m2")
	want2 := map[string]Backup{
		script: {Name: BackupName(script, 2), Version: 2},
		fresh:  {Name: BackupName(fresh, 2), Version: 2},
	}
	if d := cmp.Diff(want2, s2.Files, cmp.Comparer(sameBackup)); d != "" {
		t.Errorf("snapshot m2 (-want +got):\n%s", d)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, BackupName(script, 2))); string(b) != "#!/bin/sh\necho three\n" {
		t.Errorf("backup v2 = %q", b)
	}

	// Nothing changed: the next snapshot shares the backups.
	f.prompt(t, "m3")
	s3, _ := f.h.Snapshot("m3")
	if d := cmp.Diff(want2, s3.Files, cmp.Comparer(sameBackup)); d != "" {
		t.Errorf("snapshot m3 (-want +got):\n%s", d)
	}
	// A mode change alone is a change.
	os.Chmod(script, 0o644)
	f.prompt(t, "m4")
	if s4, _ := f.h.Snapshot("m4"); s4.Files[script].Version != 3 {
		t.Errorf("after chmod: %+v, want version 3", s4.Files[script])
	}
	// A deleted file is recorded as absent, once.
	os.Remove(fresh)
	f.prompt(t, "m5")
	f.prompt(t, "m6")
	s5, _ := f.h.Snapshot("m5")
	s6, _ := f.h.Snapshot("m6")
	if b := s5.Files[fresh]; b.Exists() || b.Version != 3 || s6.Files[fresh] != b {
		t.Errorf("deleted file: m5 %+v, m6 %+v", b, s6.Files[fresh])
	}
}

func sameBackup(a, b Backup) bool { return a.Name == b.Name && a.Version == b.Version }

func TestBeforeChangeBeforeAnyPrompt(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "x", 0o644)
	if err := f.h.BeforeChange(f.path("a.txt")); err != nil {
		t.Fatal(err)
	}
	if len(f.h.Snapshots()) != 0 || len(f.rec.lines) != 0 {
		t.Error("a backup was made with no snapshot to hold it")
	}
	if err := f.h.BeforeChange("a.txt"); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestSnapshotRecords(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.txt", "one\n", 0o644)
	f.prompt(t, "m1")
	f.edit(t, "a.txt", "two\n")
	f.edit(t, "b.txt", "new\n")
	f.prompt(t, "m2")

	es := f.rec.entries(t)
	if len(es) != 4 {
		t.Fatalf("%d records, want 4 (m1, two updates, m2)", len(es))
	}
	var updates []bool
	for _, e := range es {
		if e.Type != transcript.TypeFileHistorySnapshot || e.UUID != "" || e.IsChain() {
			t.Errorf("record %+v is not a side record", e)
		}
		_, upd, err := DecodeSnapshot(&e, "")
		if err != nil {
			t.Fatal(err)
		}
		updates = append(updates, upd)
	}
	if d := cmp.Diff([]bool{false, true, true, false}, updates); d != "" {
		t.Errorf("isSnapshotUpdate (-want +got):\n%s", d)
	}

	// The shape of the line, as Claude Code writes it.
	var line struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Update    *bool  `json:"isSnapshotUpdate"`
		Snapshot  struct {
			MessageID string                     `json:"messageId"`
			Timestamp string                     `json:"timestamp"`
			Tracked   map[string]json.RawMessage `json:"trackedFileBackups"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(f.rec.lines[2], &line); err != nil {
		t.Fatal(err)
	}
	if line.Type != "file-history-snapshot" || line.MessageID != "m1" || line.Snapshot.MessageID != "m1" || line.Update == nil || !*line.Update || line.Snapshot.Timestamp == "" {
		t.Errorf("record: %s", f.rec.lines[2])
	}
	want := `{"backupFileName":null,"version":1,"backupTime":"`
	if got := string(line.Snapshot.Tracked[f.path("b.txt")]); !strings.HasPrefix(got, want) {
		t.Errorf("created file recorded as %s, want %s…", got, want)
	}
	want = `{"backupFileName":"` + BackupName(f.path("a.txt"), 1) + `","version":1,"backupTime":"`
	if got := string(line.Snapshot.Tracked[f.path("a.txt")]); !strings.HasPrefix(got, want) {
		t.Errorf("backed-up file recorded as %s, want %s…", got, want)
	}

	// Load reads them back as they were.
	snaps, warnings, err := Load(context.Background(), bytes.NewReader(f.rec.transcript()), f.project)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Load: %v %q", err, warnings)
	}
	if d := cmp.Diff(f.h.Snapshots(), snaps, cmp.Comparer(sameBackup), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("loaded snapshots (-want +got):\n%s", d)
	}
}

func TestLoadClaudeCodeRecords(t *testing.T) {
	// Records shaped as Claude Code writes them: a path relative to the
	// session's directory (older versions), realParentDir (newer), an
	// update whose top-level messageId is another message, chain lines
	// and other side records around them, and a damaged record.
	in := strings.Join([]string{
		`{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`,
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"fix it"},"uuid":"u1","timestamp":"2026-01-02T10:00:00.000Z","sessionId":"s"}`,
		`{"type":"file-history-snapshot","messageId":"a1","snapshot":{"messageId":"u1","trackedFileBackups":{"src/app.py":{"backupFileName":"0123456789abcdef@v1","version":1,"backupTime":"2026-01-02T10:00:01.000Z"},"/abs/notes.md":{"backupFileName":null,"version":1,"backupTime":"2026-01-02T10:00:02.000Z","realParentDir":"/abs"}},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":true}`,
		`{"type":"last-prompt","lastPrompt":"fix it","leafUuid":"u1","sessionId":"s"}`,
		`{"type":"file-history-snapshot","messageId":"bad","snapshot":{"trackedFileBackups":{"x":{"backupFileName":"../../etc/passwd","version":1}}}}`,
		`{"type":"file-history-snapshot","messageId":"u2","snapshot":{"messageId":"u2","trackedFileBackups":{"src/app.py":{"backupFileName":"0123456789abcdef@v2","version":2,"backupTime":"2026-01-02T10:05:00.000Z"}},"timestamp":"2026-01-02T10:05:00.000Z"},"isSnapshotUpdate":false}`,
	}, "\n") + "\n"
	snaps, warnings, err := Load(context.Background(), strings.NewReader(in), "/home/user/proj")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "line 5") {
		t.Errorf("warnings %q, want one about line 5", warnings)
	}
	got := map[string]map[string]Backup{}
	for _, s := range snaps {
		got[s.MessageID] = s.Files
	}
	want := map[string]map[string]Backup{
		"u1": {
			"/home/user/proj/src/app.py": {Name: "0123456789abcdef@v1", Version: 1},
			"/abs/notes.md":              {Version: 1},
		},
		"u2": {"/home/user/proj/src/app.py": {Name: "0123456789abcdef@v2", Version: 2}},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(sameBackup)); d != "" {
		t.Errorf("snapshots (-want +got):\n%s", d)
	}
	if len(snaps) != 2 || snaps[0].MessageID != "u1" {
		t.Errorf("order: %+v", snaps)
	}
	// Versions continue from what the records used.
	h := New(Options{Dir: t.TempDir()}, snaps)
	if v := h.versions["/home/user/proj/src/app.py"]; v != 2 {
		t.Errorf("next version starts after %d, want 2", v)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{"a":{"backupFileName":"x@v1","version":1,"backupTime":"2026-01-02T10:00:01.000Z"}},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`))
	f.Add([]byte(`{"type":"file-history-snapshot","snapshot":null}`))
	f.Add([]byte(`{"type":"file-history-snapshot","messageId":3,"snapshot":{"trackedFileBackups":{"/a":{"backupFileName":"..","version":-1}}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := transcript.DecodeEntry(line)
		if err != nil || e.Type != transcript.TypeFileHistorySnapshot {
			return
		}
		s, upd, err := DecodeSnapshot(&e, "/p")
		if err != nil {
			return
		}
		for path, b := range s.Files {
			if !filepath.IsAbs(path) || (b.Name != "" && b.Name != filepath.Base(b.Name)) {
				t.Fatalf("unsafe snapshot entry %q: %+v", path, b)
			}
		}
		// What decodes re-encodes to the same snapshot.
		e2, err := SnapshotEntry(s, upd)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := e2.MarshalJSON()
		e3, err := transcript.DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		s2, upd2, err := DecodeSnapshot(&e3, "/p")
		if err != nil || upd2 != upd || len(s2.Files) != len(s.Files) {
			t.Fatalf("round trip: %v %v %d/%d", err, upd2, len(s2.Files), len(s.Files))
		}
	})
}
