package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/transcript"
)

// Retention moves sessions nobody has touched for cleanupPeriodDays into
// $CAIRN_HOME/trash/<id>/ — the transcript, its sidecar folder and its
// file-history — with a manifest saying where each piece came from, and
// deletes them from the trash only after trashRetentionDays more. Every
// move is a rename (or, across file systems, a copy committed by a rename
// and only then a delete), so a session is always in one place or the
// other, and an interrupted move is finished or undone by the next sweep.
//
// Retention works on the home's folders, not through transcript.Store: a
// session's file-history lies outside its project's store, the trash is
// the home's, and what moves is whole folders, by rename. It reads a
// transcript only through the file store (transcript.OpenFile). A store
// that keeps sessions elsewhere (the team store) keeps its own retention.

// ErrCleanupBusy is returned when another process is cleaning up the same
// home.
var ErrCleanupBusy = errors.New("another cairn process is cleaning up sessions")

// ErrNotInTrash is returned by Restore for an id with nothing in the trash.
var ErrNotInTrash = errors.New("no such session in the trash")

// ErrRestoreConflict is returned by Restore when something is back where a
// trashed piece of the session would go.
var ErrRestoreConflict = errors.New("the session exists again where it would be restored")

// CleanupOptions say what Cleanup takes away.
type CleanupOptions struct {
	// Now is the time ages are measured from.
	Now time.Time
	// MaxAge: a session whose last recorded activity and file modification
	// time are both older than Now-MaxAge moves to the trash.
	MaxAge time.Duration
	// KeepSessions leaves every session where it is (cleanupPeriodDays 0:
	// nothing is being kept anyway); the trash is still emptied.
	KeepSessions bool
	// TrashAge: a session that has been in the trash longer is deleted.
	TrashAge time.Duration
	// DryRun reports what would be done and changes nothing.
	DryRun bool
}

// CleanupReport says what a cleanup did, or would do in a dry run. Its
// lists are never nil.
type CleanupReport struct {
	DryRun      bool      `json:"dryRun"`
	Cutoff      time.Time `json:"cutoff"`
	TrashCutoff time.Time `json:"trashCutoff"`
	// Trashed are the sessions moved to the trash.
	Trashed []TrashedSession `json:"trashed"`
	// Kept are sessions old enough by file time that stayed, and why.
	Kept []KeptSession `json:"kept"`
	// Purged are the sessions deleted from the trash for good.
	Purged []PurgedSession `json:"purged"`
	// Errors name what could not be done; the rest went ahead.
	Errors []string `json:"errors"`
}

// TrashedSession is a session moved to the trash.
type TrashedSession struct {
	SessionID string `json:"sessionId"`
	// Path is where the transcript was.
	Path         string    `json:"path"`
	LastActivity time.Time `json:"lastActivity"`
	Modified     time.Time `json:"modified"`
	// Trash is the folder now holding it.
	Trash string `json:"trash"`
}

// KeptSession is an old session that was not moved.
type KeptSession struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Reason    string `json:"reason"`
}

// PurgedSession is a session deleted from the trash.
type PurgedSession struct {
	SessionID string    `json:"sessionId"`
	Trash     string    `json:"trash"`
	TrashedAt time.Time `json:"trashedAt"`
}

// Reasons a session old enough by file time was kept.
const (
	KeptInUse          = "in use by another process"
	KeptRecentActivity = "recent activity recorded in the transcript"
	KeptTrashTaken     = "a session with this id is already in the trash"
)

// Cleanup applies retention to every project of the home. A session is
// trashed only when both the newest timestamp near the end of its
// transcript and the file's modification time are older than the cutoff,
// and never while a writer holds the transcript's lock. Only one process
// cleans up a home at a time: a second gets ErrCleanupBusy (a dry run
// takes no lock). Cancelling ctx stops between sessions.
func Cleanup(ctx context.Context, home Home, opts CleanupOptions) (*CleanupReport, error) {
	if !opts.DryRun {
		unlock, err := lockCleanup(home)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	return cleanupLocked(ctx, home, opts)
}

// lockCleanup takes the home's cleanup lock without waiting.
func lockCleanup(home Home) (unlock func(), err error) {
	if err := os.MkdirAll(home.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the cairn home: %w", err)
	}
	l := flock.New(filepath.Join(home.Dir, ".cairn-cleanup.lock"))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.Path(), err)
	}
	if !ok {
		return nil, fmt.Errorf("%w; try again when it is done", ErrCleanupBusy)
	}
	return func() { l.Close() }, nil
}

func cleanupLocked(ctx context.Context, home Home, opts CleanupOptions) (*CleanupReport, error) {
	rep := &CleanupReport{
		DryRun:      opts.DryRun,
		Cutoff:      opts.Now.Add(-opts.MaxAge).UTC(),
		TrashCutoff: opts.Now.Add(-opts.TrashAge).UTC(),
		Trashed:     []TrashedSession{}, Kept: []KeptSession{},
		Purged: []PurgedSession{}, Errors: []string{},
	}
	t := &trasher{home: home, mv: mover{rename: os.Rename}, now: opts.Now, dry: opts.DryRun, rep: rep}
	entries, err := t.entries()
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		for _, e := range entries {
			t.settle(e)
		}
	}
	if !opts.KeepSessions {
		if err := t.sweep(ctx, rep.Cutoff); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err = t.entries()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		t.purge(e, rep.TrashCutoff)
	}
	return rep, nil
}

// trasher moves sessions in and out of the trash of one home.
type trasher struct {
	home Home
	mv   mover
	now  time.Time
	dry  bool
	rep  *CleanupReport
}

func (t *trasher) errorf(format string, args ...any) {
	t.rep.Errors = append(t.rep.Errors, fmt.Sprintf(format, args...))
}

// Trash manifest states.
const (
	stateMoving    = "moving"    // going into the trash; maybe interrupted
	stateTrashed   = "trashed"   // all in the trash
	stateRestoring = "restoring" // going back; maybe interrupted
)

// manifest is trash/<id>/manifest.json: what the entry holds and where
// each piece goes back to.
type manifest struct {
	SessionID    string      `json:"sessionId"`
	State        string      `json:"state"`
	TrashedAt    time.Time   `json:"trashedAt"`
	LastActivity time.Time   `json:"lastActivity"`
	Modified     time.Time   `json:"modified"`
	Items        []trashItem `json:"items"`
}

// trashItem is one piece of a trashed session.
type trashItem struct {
	Kind string `json:"kind"` // transcript, cast, sidecar, file-history
	// From is where it was, relative to the cairn home, with slashes.
	From string `json:"from"`
	// Name is its name inside the trash entry.
	Name string `json:"name"`
}

const manifestName = "manifest.json"

// trashEntry is one folder of the trash.
type trashEntry struct {
	dir string
	m   *manifest // nil when missing or unreadable
	err error
}

// entries lists the trash.
func (t *trasher) entries() ([]trashEntry, error) {
	ents, err := os.ReadDir(t.home.Trash())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the trash: %w", err)
	}
	var out []trashEntry
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(t.home.Trash(), e.Name())
		m, err := readManifest(dir)
		out = append(out, trashEntry{dir: dir, m: m, err: err})
	}
	return out, nil
}

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, manifestName), err)
	}
	for _, it := range m.Items {
		if !filepath.IsLocal(filepath.FromSlash(it.From)) || !filepath.IsLocal(it.Name) || strings.ContainsAny(it.Name, `/\`) {
			return nil, fmt.Errorf("%s: item %q leads outside the cairn home", filepath.Join(dir, manifestName), it.From)
		}
	}
	return &m, nil
}

func writeManifest(dir string, m *manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return renameio.WriteFile(filepath.Join(dir, manifestName), append(b, '\n'), 0o600)
}

// origin is where an item lives outside the trash; inTrash where it lives
// inside entry dir.
func (t *trasher) origin(it trashItem) string {
	return filepath.Join(t.home.Dir, filepath.FromSlash(it.From))
}

func inTrash(dir string, it trashItem) string { return filepath.Join(dir, it.Name) }

// sweep moves every expired session to the trash.
func (t *trasher) sweep(ctx context.Context, cutoff time.Time) error {
	dirs, err := projectDirs(t.home, "", true)
	if err != nil {
		return err
	}
	files, err := transcriptsIn(dirs...)
	if err != nil {
		return err
	}
	sortFiles(files)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !f.mtime.Before(cutoff) {
			continue
		}
		last, err := lastActivity(f.path)
		if err != nil {
			t.errorf("%s: %v", f.path, err)
			continue
		}
		if !last.Before(cutoff) {
			t.rep.Kept = append(t.rep.Kept, KeptSession{f.id(), f.path, KeptRecentActivity})
			continue
		}
		t.trash(f, last, cutoff)
	}
	return nil
}

// lastActivity returns the newest timestamp in the last 64 KiB of a
// transcript, or the zero time when there is none.
func lastActivity(path string) (time.Time, error) {
	src, err := transcript.OpenFile(path)
	if err != nil {
		return time.Time{}, err
	}
	defer src.Close()
	lt, err := readLite(src, src.Size(), make([]byte, 2*liteBuf+1), liteBuf)
	if err != nil {
		return time.Time{}, err
	}
	var newest time.Time
	lines(lt.tail, lt.tailCut, false, true, func(line []byte) bool {
		if !bytes.Contains(line, patTimestamp) {
			return true
		}
		var ll struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(line, &ll) == nil {
			if ts := parseTime(ll.Timestamp); ts.After(newest) {
				newest = ts
			}
		}
		return true
	})
	return newest, nil
}

// trash moves one expired session into trash/<id>/, holding the
// transcript's lock so no writer opens it meanwhile.
func (t *trasher) trash(f sessionFile, last, cutoff time.Time) {
	id := f.id()
	kept := func(reason string) { t.rep.Kept = append(t.rep.Kept, KeptSession{id, f.path, reason}) }
	lock := flock.New(f.path, flock.SetFlag(os.O_RDONLY))
	ok, err := lock.TryLock()
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.errorf("lock %s: %v", f.path, err)
		}
		return
	}
	if !ok {
		kept(KeptInUse)
		return
	}
	defer lock.Close()
	// A writer may have appended before the lock was taken.
	if st, err := os.Stat(f.path); err != nil || !st.ModTime().Before(cutoff) {
		return
	}
	dir := filepath.Join(t.home.Trash(), id)
	if _, err := os.Lstat(dir); err == nil {
		kept(KeptTrashTaken)
		return
	}
	m := &manifest{
		SessionID: id, State: stateMoving, TrashedAt: t.now.UTC(),
		LastActivity: last.UTC(), Modified: f.mtime.UTC(), Items: t.itemsOf(f),
	}
	done := TrashedSession{SessionID: id, Path: f.path, LastActivity: m.LastActivity, Modified: m.Modified, Trash: dir}
	if t.dry {
		t.rep.Trashed = append(t.rep.Trashed, done)
		return
	}
	if err := t.moveIn(dir, m); err != nil {
		t.errorf("move session %s to the trash: %v", id, err)
		return
	}
	t.rep.Trashed = append(t.rep.Trashed, done)
}

// itemsOf lists the pieces of a session that exist: the transcript first.
func (t *trasher) itemsOf(f sessionFile) []trashItem {
	id := f.id()
	rel := func(p string) string { return filepath.ToSlash(strings.TrimPrefix(t.home.cacheKey(p), "./")) }
	items := []trashItem{{Kind: "transcript", From: rel(f.path), Name: id + ".jsonl"}}
	if p := filepath.Join(f.dir, id+".cast"); exists(p) {
		items = append(items, trashItem{Kind: "cast", From: rel(p), Name: id + ".cast"})
	}
	if p := filepath.Join(f.dir, id); exists(p) {
		items = append(items, trashItem{Kind: "sidecar", From: rel(p), Name: "sidecar"})
	}
	// file-history is keyed by session id alone: leave it if another
	// project has a transcript with the same id.
	others, _ := filepath.Glob(filepath.Join(t.home.Projects(), "*", id+".jsonl"))
	if p := t.home.FileHistory(id); exists(p) && len(others) <= 1 {
		items = append(items, trashItem{Kind: "file-history", From: rel(p), Name: "file-history"})
	}
	return items
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// moveIn creates the trash entry and moves the items into it, transcript
// first: from then on the session is in the trash, and an interruption is
// rolled forward by the next cleanup.
func (t *trasher) moveIn(dir string, m *manifest) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeManifest(dir, m); err != nil {
		os.RemoveAll(dir)
		return err
	}
	for i, it := range m.Items {
		if err := t.mv.move(t.origin(it), inTrash(dir, it)); err != nil {
			if i == 0 { // nothing moved yet
				os.RemoveAll(dir)
			}
			return err
		}
	}
	m.State = stateTrashed
	return writeManifest(dir, m)
}

// settle finishes a move into the trash that was interrupted. If the
// transcript is still in its project the session never left: the pieces
// already moved go back. Otherwise the rest follow it into the trash.
func (t *trasher) settle(e trashEntry) {
	if e.m == nil || e.m.State != stateMoving || len(e.m.Items) == 0 {
		return
	}
	removePartials(e.dir)
	if exists(t.origin(e.m.Items[0])) {
		for _, it := range e.m.Items {
			if err := t.putBack(e.dir, it); err != nil {
				t.errorf("undo the interrupted trashing of %s: %v", e.m.SessionID, err)
				return
			}
		}
		if err := os.RemoveAll(e.dir); err != nil {
			t.errorf("remove %s: %v", e.dir, err)
		}
		return
	}
	for _, it := range e.m.Items[1:] {
		src, dst := t.origin(it), inTrash(e.dir, it)
		var err error
		switch {
		case exists(src) && exists(dst): // copied, not yet deleted
			err = os.RemoveAll(src)
		case exists(src):
			err = t.mv.move(src, dst)
		}
		if err != nil {
			t.errorf("finish trashing %s: %v", e.m.SessionID, err)
			return
		}
	}
	e.m.State = stateTrashed
	if err := writeManifest(e.dir, e.m); err != nil {
		t.errorf("finish trashing %s: %v", e.m.SessionID, err)
	}
}

// putBack returns an item of an interrupted trashing to its place, or
// drops the trash's copy when the original is (still) there.
func (t *trasher) putBack(dir string, it trashItem) error {
	src, dst := inTrash(dir, it), t.origin(it)
	switch {
	case !exists(src):
		return nil
	case exists(dst):
		return os.RemoveAll(src)
	}
	return t.mv.move(src, dst)
}

func removePartials(dir string) {
	ps, _ := filepath.Glob(filepath.Join(dir, "*"+partialSuffix))
	for _, p := range ps {
		os.RemoveAll(p)
	}
}

// purge deletes a trash entry whose grace period is over.
func (t *trasher) purge(e trashEntry, cutoff time.Time) {
	switch {
	case e.m == nil:
		t.errorf("%s has no readable manifest (%v); it was left alone, remove it by hand if it is not needed", e.dir, e.err)
		return
	case e.m.State == stateRestoring:
		t.errorf("restoring %s was interrupted; run `cairn sessions restore %s` to finish", e.m.SessionID, e.m.SessionID)
		return
	case e.m.State != stateTrashed || !e.m.TrashedAt.Before(cutoff):
		return
	}
	if !t.dry {
		if err := os.RemoveAll(e.dir); err != nil {
			t.errorf("delete %s from the trash: %v", e.m.SessionID, err)
			return
		}
	}
	t.rep.Purged = append(t.rep.Purged, PurgedSession{SessionID: e.m.SessionID, Trash: e.dir, TrashedAt: e.m.TrashedAt})
}

// Restored describes a session brought back from the trash.
type Restored struct {
	SessionID string `json:"sessionId"`
	// Path is the transcript, back where it was.
	Path string `json:"path"`
	// Items lists everything put back, transcript first.
	Items []string `json:"items"`
}

// Restore brings a trashed session back where it was: transcript, sidecar
// folder and file-history. id may be a unique prefix. Nothing moves when
// any piece's place is taken again (ErrRestoreConflict). The transcript's
// modification time is set to now, so retention keeps it for another full
// period instead of taking it again at the next sweep.
func Restore(ctx context.Context, home Home, id string, now time.Time) (*Restored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := lockCleanup(home)
	if err != nil {
		return nil, err
	}
	defer unlock()
	dir, err := findInTrash(home, id)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("read the trash entry: %w", err)
	}
	t := &trasher{home: home, mv: mover{rename: os.Rename}, now: now, rep: &CleanupReport{}}
	return t.restore(dir, m)
}

func (t *trasher) restore(dir string, m *manifest) (*Restored, error) {
	if len(m.Items) == 0 {
		return nil, fmt.Errorf("the trash entry %s lists nothing to restore", dir)
	}
	if m.State == stateMoving {
		t.settle(trashEntry{dir: dir, m: m})
		if len(t.rep.Errors) > 0 {
			return nil, errors.New(strings.Join(t.rep.Errors, "; "))
		}
		if !exists(dir) { // the trashing was undone: it is already back
			return &Restored{SessionID: m.SessionID, Path: t.origin(m.Items[0])}, nil
		}
	}
	removePartials(dir)
	if err := t.checkRestore(dir, m); err != nil {
		return nil, err
	}
	m.State = stateRestoring
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	// The transcript last: the session reappears only once it is whole.
	order := append(slices.Clone(m.Items[1:]), m.Items[0])
	r := &Restored{SessionID: m.SessionID, Path: t.origin(m.Items[0])}
	for _, it := range order {
		src, dst := inTrash(dir, it), t.origin(it)
		if !exists(src) {
			continue
		}
		if exists(dst) { // copied back, not yet deleted here
			if err := os.RemoveAll(src); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, fmt.Errorf("restore %s: %w", it.Kind, err)
		}
		if err := t.mv.move(src, dst); err != nil {
			return nil, fmt.Errorf("restore %s: %w; run the command again to finish", it.Kind, err)
		}
		r.Items = append(r.Items, dst)
	}
	slices.Reverse(r.Items)
	if err := os.Chtimes(r.Path, t.now, t.now); err != nil {
		return nil, fmt.Errorf("restored, but could not mark it as used now: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("restored, but could not remove %s: %w", dir, err)
	}
	return r, nil
}

// checkRestore fails when any piece still in the trash has its place
// taken. A piece both here and there after an interrupted restore is the
// restore's own copy, except for a transcript of a different size.
func (t *trasher) checkRestore(dir string, m *manifest) error {
	for _, it := range m.Items {
		src, dst := inTrash(dir, it), t.origin(it)
		if !exists(src) || !exists(dst) {
			continue
		}
		if m.State == stateRestoring && (it.Kind != "transcript" || sameSize(src, dst)) {
			continue
		}
		return fmt.Errorf("%w: %s; move it away first, then run `cairn sessions restore %s` again", ErrRestoreConflict, dst, m.SessionID)
	}
	return nil
}

func sameSize(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && sa.Size() == sb.Size()
}

// findInTrash resolves an id, or a unique prefix of one, to its entry.
func findInTrash(home Home, id string) (string, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return "", fmt.Errorf("invalid session id %q", id)
	}
	dir := filepath.Join(home.Trash(), id)
	if exists(filepath.Join(dir, manifestName)) {
		return dir, nil
	}
	ents, _ := os.ReadDir(home.Trash())
	var found []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), id) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%q: %w (%s); `cairn sessions trash` lists what can be restored", id, ErrNotInTrash, home.Trash())
	case 1:
		return filepath.Join(home.Trash(), found[0]), nil
	}
	return "", fmt.Errorf("%q matches %d sessions in the trash (%s); give more of the id", id, len(found), strings.Join(found, ", "))
}

// mover moves files and folders within a home. rename is os.Rename but
// for tests.
type mover struct {
	rename func(oldpath, newpath string) error
}

const partialSuffix = ".partial"

// move renames src to dst. Across file systems (EXDEV) it copies src to
// dst+".partial", renames that to dst — the commit point — and only then
// deletes src, so src is gone only once dst is whole.
func (m mover) move(src, dst string) error {
	err := m.rename(src, dst)
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	tmp := dst + partialSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := copyTree(src, tmp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("copy %s across file systems: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	syncDir(filepath.Dir(dst))
	return os.RemoveAll(src)
}

// copyTree copies a file, folder or symbolic link with modes and
// modification times, syncing file contents to disk.
func copyTree(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case st.IsDir():
		if err := os.Mkdir(dst, st.Mode().Perm()|0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		if err := os.Chmod(dst, st.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(dst, st.ModTime(), st.ModTime())
	case st.Mode().IsRegular():
		return copyFile(src, dst, st)
	}
	return nil // sockets and devices have no place in a session
}

func copyFile(src, dst string, st fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, st.ModTime(), st.ModTime())
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// LastCleanupFile is where the time of the last automatic sweep is kept.
func (h Home) LastCleanupFile() string { return filepath.Join(h.Dir, ".last-cleanup") }

// sweepInterval is how often MaybeSweep runs at most.
const sweepInterval = 24 * time.Hour

// MaybeSweep runs retention with the options that options returns (the
// user's settings), unless a sweep ran within the last day (per
// $CAIRN_HOME/.last-cleanup) or another process is sweeping; it then
// returns nil and no error, and options is not called. After a sweep it
// records now in .last-cleanup. An error from options (invalid settings)
// stops it, so a typo never deletes sessions early.
func MaybeSweep(ctx context.Context, home Home, now time.Time, options func() (CleanupOptions, error)) (*CleanupReport, error) {
	unlock, err := lockCleanup(home)
	if errors.Is(err, ErrCleanupBusy) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	if last, ok := readLastCleanup(home.LastCleanupFile()); ok && now.Sub(last).Abs() < sweepInterval {
		return nil, nil
	}
	opts, err := options()
	if err != nil {
		return nil, fmt.Errorf("retention skipped: %w", err)
	}
	rep, err := cleanupLocked(ctx, home, opts)
	if err != nil {
		return nil, err
	}
	stamp := now.UTC().Format("2006-01-02T15:04:05.000Z") + "\n"
	if err := renameio.WriteFile(home.LastCleanupFile(), []byte(stamp), 0o600); err != nil {
		return rep, fmt.Errorf("record the sweep in %s: %w", home.LastCleanupFile(), err)
	}
	return rep, nil
}

// readLastCleanup reads .last-cleanup leniently: an ISO 8601 time with or
// without fraction or zone, a date, Unix seconds or milliseconds, any of
// them quoted or inside a JSON object under "timestamp", "time" or
// "lastCleanup".
func readLastCleanup(path string) (time.Time, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, false
	}
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "{") {
		var obj map[string]any
		if json.Unmarshal(b, &obj) != nil {
			return time.Time{}, false
		}
		for _, k := range []string{"timestamp", "time", "lastCleanup"} {
			if v, ok := obj[k]; ok {
				s = strings.TrimSpace(fmt.Sprint(v))
				if f, ok := v.(float64); ok {
					s = strconv.FormatFloat(f, 'f', -1, 64)
				}
				break
			}
		}
	}
	return parseLenientTime(strings.Trim(s, `"' `))
}

func parseLenientTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil && n > 0 {
		if n > 1e11 { // milliseconds
			return time.UnixMilli(int64(n)), true
		}
		return time.Unix(int64(n), 0), true
	}
	return time.Time{}, false
}
