package session

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

const day = 24 * time.Hour

var now = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

// session writes a transcript whose timestamps start at active and whose
// file was last modified at mtime, with a sidecar folder, a .cast and
// file-history, and returns its path.
func writeSession(t *testing.T, home Home, cwd, id string, active, mtime time.Time) string {
	t.Helper()
	f := newFixture(id, cwd, active)
	f.turn("prompt of " + id)
	dir := home.ProjectDir(cwd)
	writeFile(t, filepath.Join(dir, id, "tool-results", "toolu_1.txt"), []byte("big output"), mtime)
	writeFile(t, filepath.Join(dir, id+".cast"), []byte("cast"), mtime)
	writeFile(t, filepath.Join(home.FileHistory(id), "0123456789abcdef@v1"), []byte("backup"), mtime)
	return f.write(t, filepath.Join(dir, id+".jsonl"), mtime)
}

// tree maps every file and folder under dir to its mode, and each file to
// its modification time and size, to tell what changed.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = st.Mode().String()
		if st.Mode().IsRegular() { // folders change as entries come and go
			out[rel] += " " + st.ModTime().UTC().Format(time.RFC3339Nano) + " " + strings.Repeat("#", int(min(st.Size(), 64)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	idOld    = "aaaaaaaa-0000-4000-8000-000000000001"
	idActive = "bbbbbbbb-0000-4000-8000-000000000002"
	idNew    = "cccccccc-0000-4000-8000-000000000003"
	idLocked = "dddddddd-0000-4000-8000-000000000004"
)

// retentionHome builds a home with one session of each kind and a writer
// holding idLocked open; it returns the home and the writer.
func retentionHome(t *testing.T) (Home, transcript.Appender) {
	t.Helper()
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	writeSession(t, home, cwd, idOld, now.Add(-40*day), now.Add(-40*day))
	// Modified long ago, but the transcript records use last week.
	writeSession(t, home, cwd, idActive, now.Add(-7*day), now.Add(-40*day))
	// Old timestamps (copied from elsewhere), but the file is new.
	writeSession(t, home, "/home/user/other", idNew, now.Add(-90*day), now.Add(-day))
	writeSession(t, home, cwd, idLocked, now.Add(-40*day), now.Add(-40*day))
	app, err := transcript.NewFileStore(home.ProjectDir(cwd)).OpenAppender(context.Background(), idLocked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	// OpenAppender may touch nothing, but make sure the file is still old.
	p := filepath.Join(home.ProjectDir(cwd), idLocked+".jsonl")
	if err := os.Chtimes(p, now.Add(-40*day), now.Add(-40*day)); err != nil {
		t.Fatal(err)
	}
	return home, app
}

var opts30 = CleanupOptions{Now: now, MaxAge: 30 * day, TrashAge: 30 * day}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	home, _ := retentionHome(t)
	proj := home.ProjectDir("/home/user/proj")

	// Two sessions already in the trash: one past its grace period.
	for _, tc := range []struct {
		id string
		at time.Time
	}{{"eeeeeeee-0000-4000-8000-000000000005", now.Add(-31 * day)}, {"ffffffff-0000-4000-8000-000000000006", now.Add(-29 * day)}} {
		dir := filepath.Join(home.Trash(), tc.id)
		writeFile(t, filepath.Join(dir, tc.id+".jsonl"), []byte("{}\n"), tc.at)
		if err := writeManifest(dir, &manifest{SessionID: tc.id, State: stateTrashed, TrashedAt: tc.at,
			Items: []trashItem{{Kind: "transcript", From: "projects/x/" + tc.id + ".jsonl", Name: tc.id + ".jsonl"}}}); err != nil {
			t.Fatal(err)
		}
	}

	rep, err := Cleanup(ctx, home, opts30)
	if err != nil {
		t.Fatal(err)
	}
	want := &CleanupReport{
		Cutoff: now.Add(-30 * day), TrashCutoff: now.Add(-30 * day),
		Trashed: []TrashedSession{{
			SessionID: idOld, Path: filepath.Join(proj, idOld+".jsonl"),
			LastActivity: now.Add(-40*day + 4*time.Second), Modified: now.Add(-40 * day),
			Trash: filepath.Join(home.Trash(), idOld),
		}},
		Kept: []KeptSession{
			{idActive, filepath.Join(proj, idActive+".jsonl"), KeptRecentActivity},
			{idLocked, filepath.Join(proj, idLocked+".jsonl"), KeptInUse},
		},
		Purged: []PurgedSession{{"eeeeeeee-0000-4000-8000-000000000005", filepath.Join(home.Trash(), "eeeeeeee-0000-4000-8000-000000000005"), now.Add(-31 * day)}},
		Errors: []string{},
	}
	sortKept := cmp.Transformer("sort", func(k []KeptSession) []KeptSession {
		k = slices.Clone(k)
		slices.SortFunc(k, func(a, b KeptSession) int { return strings.Compare(a.SessionID, b.SessionID) })
		return k
	})
	if diff := cmp.Diff(want, rep, sortKept); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		path string
		want bool
	}{
		{filepath.Join(proj, idOld+".jsonl"), false},
		{filepath.Join(proj, idOld), false},
		{filepath.Join(proj, idOld+".cast"), false},
		{home.FileHistory(idOld), false},
		{filepath.Join(home.Trash(), idOld, idOld+".jsonl"), true},
		{filepath.Join(home.Trash(), idOld, "sidecar", "tool-results", "toolu_1.txt"), true},
		{filepath.Join(home.Trash(), idOld, idOld+".cast"), true},
		{filepath.Join(home.Trash(), idOld, "file-history", "0123456789abcdef@v1"), true},
		{filepath.Join(home.Trash(), idOld, manifestName), true},
		{filepath.Join(proj, idActive+".jsonl"), true},
		{filepath.Join(proj, idLocked+".jsonl"), true},
		{filepath.Join(proj, idLocked), true},
		{home.FileHistory(idLocked), true},
		{filepath.Join(home.ProjectDir("/home/user/other"), idNew+".jsonl"), true},
		{filepath.Join(home.Trash(), "eeeeeeee-0000-4000-8000-000000000005"), false},
		{filepath.Join(home.Trash(), "ffffffff-0000-4000-8000-000000000006"), true},
	} {
		if got := exists(tc.path); got != tc.want {
			t.Errorf("%s exists = %v; want %v", tc.path, got, tc.want)
		}
	}

	// The trashed session is no longer listed; the others are.
	infos, err := List(ctx, home, ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.SessionID)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{idActive, idNew, idLocked}, ids); diff != "" {
		t.Errorf("listed after cleanup (-want +got):\n%s", diff)
	}
}

func TestCleanupDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	home, _ := retentionHome(t)
	before := tree(t, home.Dir)
	dry := opts30
	dry.DryRun = true
	rep, err := Cleanup(ctx, home, dry)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, tree(t, home.Dir)); diff != "" {
		t.Errorf("a dry run changed files (-before +after):\n%s", diff)
	}
	if len(rep.Trashed) != 1 || rep.Trashed[0].SessionID != idOld || !rep.DryRun {
		t.Errorf("dry run report: %+v; want idOld to be trashed", rep)
	}
	real, err := Cleanup(ctx, home, opts30)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep.Trashed, real.Trashed); diff != "" {
		t.Errorf("the dry run and the real run disagree (-dry +real):\n%s", diff)
	}
}

func TestCleanupIsExclusive(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	unlock, err := lockCleanup(home)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Cleanup(context.Background(), home, opts30); !errors.Is(err, ErrCleanupBusy) {
		t.Fatalf("Cleanup while another holds the lock: %v; want ErrCleanupBusy", err)
	}
	if _, err := Restore(context.Background(), home, idOld, now); !errors.Is(err, ErrCleanupBusy) {
		t.Fatalf("Restore while another holds the lock: %v; want ErrCleanupBusy", err)
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	home := Home{Dir: t.TempDir()}
	writeSession(t, home, "/p", idOld, now.Add(-40*day), now.Add(-40*day))
	before := tree(t, home.Dir)

	if _, err := Cleanup(ctx, home, opts30); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(ctx, home, idOld[:8], now) // a prefix is enough
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home.ProjectDir("/p"), idOld+".jsonl")
	if r.Path != path || len(r.Items) != 4 || r.Items[0] != path {
		t.Errorf("Restore = %+v; want the transcript and 3 more pieces back at %s", r, path)
	}
	after := tree(t, home.Dir)
	// Everything is back as it was, but the transcript is marked as used
	// now, and the trash and lock files remain.
	rel, _ := filepath.Rel(home.Dir, path)
	if st, err := os.Stat(path); err != nil || !st.ModTime().Equal(now) {
		t.Errorf("restored transcript mtime = %v, %v; want %v", st.ModTime(), err, now)
	}
	delete(after, rel)
	delete(before, rel)
	for _, p := range []string{"trash", ".cairn-cleanup.lock"} {
		delete(after, p)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("after a restore (-before +after):\n%s", diff)
	}

	t.Run("not in the trash", func(t *testing.T) {
		if _, err := Restore(ctx, home, idOld, now); !errors.Is(err, ErrNotInTrash) {
			t.Fatalf("second Restore: %v; want ErrNotInTrash", err)
		}
	})

	t.Run("conflict", func(t *testing.T) {
		if err := os.Chtimes(path, now.Add(-40*day), now.Add(-40*day)); err != nil {
			t.Fatal(err)
		}
		if _, err := Cleanup(ctx, home, opts30); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, []byte("a new session with the same id\n"), now)
		trashed := tree(t, home.Trash())
		_, err := Restore(ctx, home, idOld, now)
		if !errors.Is(err, ErrRestoreConflict) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Restore over a new session: %v; want ErrRestoreConflict naming %s", err, path)
		}
		if diff := cmp.Diff(trashed, tree(t, home.Trash())); diff != "" {
			t.Errorf("a refused restore changed the trash:\n%s", diff)
		}
	})
}

// exdev is a rename that always fails as across file systems.
func exdev(oldpath, newpath string) error {
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EXDEV}
}

func TestMoveAcrossFileSystems(t *testing.T) {
	dir := t.TempDir()
	mtime := now.Add(-3 * day)
	writeFile(t, filepath.Join(dir, "src", "a", "file.txt"), []byte("content"), mtime)
	if err := os.Symlink("file.txt", filepath.Join(dir, "src", "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "src", "a", "file.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "single.jsonl"), []byte("{}\n"), mtime)
	before := tree(t, filepath.Join(dir, "src"))

	m := mover{rename: exdev}
	for _, p := range []string{"src", "single.jsonl"} {
		if err := m.move(filepath.Join(dir, p), filepath.Join(dir, p+".moved")); err != nil {
			t.Fatal(err)
		}
		if exists(filepath.Join(dir, p)) || exists(filepath.Join(dir, p+".moved"+partialSuffix)) {
			t.Errorf("%s: the source or the partial copy is left behind", p)
		}
	}
	if diff := cmp.Diff(before, tree(t, filepath.Join(dir, "src.moved"))); diff != "" {
		t.Errorf("copied folder differs (-src +copy):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "single.jsonl.moved")); err != nil || string(b) != "{}\n" {
		t.Errorf("copied file = %q, %v", b, err)
	}
}

func TestCleanupFinishesInterruptedMoves(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		moved       []string // items already in the trash when the crash came
		wantTrashed bool
	}{
		{"crash after the transcript: roll forward", []string{"transcript"}, true},
		{"crash after a copy, before the delete", []string{"transcript", "sidecar copy"}, true},
		{"crash before the transcript: roll back", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := Home{Dir: t.TempDir()}
			// Recent, so this cleanup would not trash it by itself.
			path := writeSession(t, home, "/p", idOld, now.Add(-day), now.Add(-day))
			f := sessionFile{path: path, dir: filepath.Dir(path)}
			tr := &trasher{home: home, mv: mover{rename: os.Rename}, now: now.Add(-day), rep: &CleanupReport{}}
			m := &manifest{SessionID: idOld, State: stateMoving, TrashedAt: now.Add(-day), Items: tr.itemsOf(f)}
			dir := filepath.Join(home.Trash(), idOld)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := writeManifest(dir, m); err != nil {
				t.Fatal(err)
			}
			for _, it := range m.Items {
				switch {
				case slices.Contains(tc.moved, it.Kind):
					if err := os.Rename(tr.origin(it), inTrash(dir, it)); err != nil {
						t.Fatal(err)
					}
				case slices.Contains(tc.moved, it.Kind+" copy"):
					if err := copyTree(tr.origin(it), inTrash(dir, it)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.moved == nil { // a half-made copy of the transcript
				writeFile(t, filepath.Join(dir, idOld+".jsonl"+partialSuffix), []byte("{"), now)
			}

			rep, err := Cleanup(ctx, home, opts30)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Errors) > 0 {
				t.Fatalf("errors: %q", rep.Errors)
			}
			for _, it := range m.Items {
				if got := exists(inTrash(dir, it)); got != tc.wantTrashed {
					t.Errorf("%s in the trash = %v; want %v", it.Kind, got, tc.wantTrashed)
				}
				if got := exists(tr.origin(it)); got == tc.wantTrashed {
					t.Errorf("%s in place = %v; want %v", it.Kind, got, !tc.wantTrashed)
				}
			}
			if tc.wantTrashed {
				got, err := readManifest(dir)
				if err != nil || got.State != stateTrashed {
					t.Errorf("manifest after settling: %+v, %v; want state %q", got, err, stateTrashed)
				}
			} else if exists(dir) {
				t.Errorf("the undone trash entry %s is still there", dir)
			}
		})
	}
}

func TestMaybeSweep(t *testing.T) {
	ctx := context.Background()
	home := Home{Dir: t.TempDir()}
	writeSession(t, home, "/p", idOld, now.Add(-40*day), now.Add(-40*day))
	at := func(when time.Time) func() (CleanupOptions, error) {
		return func() (CleanupOptions, error) {
			return CleanupOptions{Now: when, MaxAge: 30 * day, TrashAge: 30 * day}, nil
		}
	}
	notDue := func() (CleanupOptions, error) {
		t.Error("the options were asked for although no sweep was due")
		return CleanupOptions{}, errors.New("not due")
	}

	rep, err := MaybeSweep(ctx, home, now, at(now))
	if err != nil || rep == nil || len(rep.Trashed) != 1 {
		t.Fatalf("first sweep: %+v, %v; want idOld trashed", rep, err)
	}
	b, err := os.ReadFile(home.LastCleanupFile())
	if err != nil || string(b) != "2027-03-01T12:00:00.000Z\n" {
		t.Fatalf(".last-cleanup = %q, %v", b, err)
	}

	writeSession(t, home, "/p", idActive, now.Add(-40*day), now.Add(-40*day))
	if rep, err := MaybeSweep(ctx, home, now.Add(23*time.Hour), notDue); rep != nil || err != nil {
		t.Fatalf("second sweep the same day: %+v, %v; want none", rep, err)
	}
	if !exists(filepath.Join(home.ProjectDir("/p"), idActive+".jsonl")) {
		t.Fatal("the second sweep the same day moved a session")
	}

	t.Run("another process sweeping", func(t *testing.T) {
		unlock, err := lockCleanup(home)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		if rep, err := MaybeSweep(ctx, home, now.Add(48*time.Hour), notDue); rep != nil || err != nil {
			t.Fatalf("sweep while locked: %+v, %v; want none", rep, err)
		}
	})

	t.Run("options fail", func(t *testing.T) {
		broken := func() (CleanupOptions, error) {
			return CleanupOptions{}, errors.New("settings.json: invalid JSON")
		}
		_, err := MaybeSweep(ctx, home, now.Add(48*time.Hour), broken)
		if err == nil || !strings.Contains(err.Error(), "settings.json: invalid JSON") {
			t.Fatalf("sweep with broken options: %v; want their error", err)
		}
		if !exists(filepath.Join(home.ProjectDir("/p"), idActive+".jsonl")) {
			t.Fatal("a sweep with broken options moved a session")
		}
	})

	t.Run("next day", func(t *testing.T) {
		rep, err := MaybeSweep(ctx, home, now.Add(25*time.Hour), at(now.Add(25*time.Hour)))
		if err != nil || rep == nil || len(rep.Trashed) != 1 || rep.Trashed[0].SessionID != idActive {
			t.Fatalf("sweep the next day: %+v, %v; want idActive trashed", rep, err)
		}
	})

	t.Run("KeepSessions", func(t *testing.T) {
		writeSession(t, home, "/p", idNew, now.Add(-400*day), now.Add(-400*day))
		keep := func() (CleanupOptions, error) {
			return CleanupOptions{Now: now.Add(72 * time.Hour), KeepSessions: true, TrashAge: 30 * day}, nil
		}
		rep, err := MaybeSweep(ctx, home, now.Add(72*time.Hour), keep)
		if err != nil || rep == nil || len(rep.Trashed) != 0 {
			t.Fatalf("sweep keeping sessions: %+v, %v; want nothing trashed", rep, err)
		}
	})
}

func TestReadLastCleanup(t *testing.T) {
	at := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, content string
		want          time.Time
		ok            bool
	}{
		{"ours", "2027-03-01T12:00:00.000Z\n", at, true},
		{"no fraction", "2027-03-01T12:00:00Z", at, true},
		{"offset", "2027-03-01T13:00:00+01:00", at, true},
		{"no zone", "2027-03-01T12:00:00", at, true},
		{"space", "2027-03-01 12:00:00", at, true},
		{"date", "2027-03-01", at.Truncate(day), true},
		{"quoted", `"2027-03-01T12:00:00.000Z"`, at, true},
		{"seconds", "1803902400", at, true},
		{"milliseconds", "1803902400000", at, true},
		{"json", `{"timestamp":"2027-03-01T12:00:00.000Z"}`, at, true},
		{"json ms", `{"lastCleanup":1803902400000}`, at, true},
		{"garbage", "yesterday", time.Time{}, false},
		{"empty", "", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), ".last-cleanup")
			writeFile(t, p, []byte(tc.content), now)
			got, ok := readLastCleanup(p)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("readLastCleanup(%q) = %v, %v; want %v, %v", tc.content, got, ok, tc.want, tc.ok)
			}
		})
	}
}
