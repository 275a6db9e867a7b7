package filehistory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/transcript"
)

// Backup is a tracked file's state in a snapshot.
type Backup struct {
	// Name is the backup file in the session's folder (<hash>@v<n>); empty
	// when the file did not exist.
	Name string
	// Version numbers the backups of one file, from 1.
	Version int
	// Time is when the backup was made.
	Time time.Time
}

// Exists reports whether the file existed, that is, has a backup file.
func (b Backup) Exists() bool { return b.Name != "" }

// Snapshot is the state of the tracked files when a user message was sent.
type Snapshot struct {
	// MessageID is the uuid of the user message.
	MessageID string
	Time      time.Time
	// Files maps each tracked file's absolute path to its backup.
	Files map[string]Backup
}

func (s *Snapshot) clone() *Snapshot {
	c := *s
	c.Files = maps.Clone(s.Files)
	if c.Files == nil {
		c.Files = make(map[string]Backup)
	}
	return &c
}

// Options configure a History.
type Options struct {
	// Dir is the session's backup folder, <home>/file-history/<sessionId>.
	Dir string
	// Record writes a file-history-snapshot record to the session's
	// transcript. Nil records nothing (the snapshots live in memory only).
	Record func(ctx context.Context, e transcript.Entry) error
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Warn hears about what could not be backed up, once per kind of
	// problem. May be nil.
	Warn func(string)
	// Shell bounds the shadow copy TrackShell keeps; zero fields take the
	// defaults.
	Shell ShadowOptions
}

// History is one session's file history: its snapshots, in the order the
// messages were sent, and the backups they name. It is safe for concurrent
// use; one mutex guards all of its state.
type History struct {
	opts Options
	// ready is closed once the snapshots are in (see OpenLater); every
	// method but Prompt waits for it.
	ready chan struct{}

	mu sync.Mutex
	// pending are the messages Prompt was given before ready, in order:
	// their snapshots are taken once it is. off is set when the
	// snapshots could not be read: Prompt then takes none, so no change
	// is backed up either.
	pending  []string
	off      bool
	snaps    []*Snapshot
	versions map[string]int // newest version used, by path
	warned   map[string]bool
	shadow   *Shadow
}

// New returns a history holding snaps (read back from the transcript by
// Load; nil for a new session).
func New(opts Options, snaps []Snapshot) *History {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &History{opts: opts, ready: closedReady, versions: make(map[string]int), warned: make(map[string]bool)}
	h.add(snaps)
	return h
}

// closedReady is the ready of a History made with its snapshots.
var closedReady = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// OpenLater returns a history whose snapshots are still being read (the
// file before a resumed conversation, which can be hundreds of megabytes):
// load gives them, on a goroutine of its own, and warnings about the
// records it skipped. The history is usable at once, so a resumed session
// need not wait for them before its first request. A Prompt given before
// they are in takes its snapshot once they are, and records it then: the
// project changes between the two only by the tools, and every other
// method waits for them (so does Close). Should load fail, the history is
// off for the session, with a warning: a snapshot taken without the
// earlier ones would leave out files they track, and rewinding to it
// would delete those as made after it. What the transcript holds stays
// for `cairn sessions rewind`.
//
// from is the folder of the session the snapshots are from, as for
// OpenLoaded: when it is another session's (a fork), the backups are
// copied and the snapshots recorded in this session's transcript first,
// so OpenLater waits for them and is OpenLoaded.
func OpenLater(ctx context.Context, from string, opts Options, load func() ([]Snapshot, []string, error)) (*History, error) {
	if !ownFolder(from, opts.Dir) {
		snaps, warnings, err := load()
		if err != nil {
			return nil, err
		}
		return OpenLoaded(ctx, snaps, warnings, from, opts)
	}
	h := New(opts, nil)
	h.ready = make(chan struct{})
	ctx = context.WithoutCancel(ctx) // the snapshots of pending prompts are recorded
	go func() {
		snaps, warnings, err := load()
		h.mu.Lock()
		defer h.mu.Unlock()
		defer close(h.ready)
		for _, w := range warnings {
			h.warnf("file history: %s", w)
		}
		if err != nil {
			h.off, h.pending = true, nil
			h.warnf("file history is off for this session: %v; files are not backed up, and rewinding restores only what the transcript recorded before", err)
			return
		}
		h.add(snaps)
		for _, id := range h.pending {
			s := h.capture(id)
			h.snaps = append(h.snaps, s)
			if err := h.record(ctx, s, false); err != nil {
				h.warnf("file history: %v", err)
			}
		}
		h.pending = nil
	}()
	return h, nil
}

// ownFolder reports whether snapshots from the session folder from belong
// to the session whose folder is dir: its own, or none ("").
func ownFolder(from, dir string) bool {
	return from == "" || filepath.Clean(from) == filepath.Clean(dir)
}

// lock waits for the snapshots (see OpenLater) and takes h.mu.
func (h *History) lock() {
	<-h.ready
	h.mu.Lock()
}

func (h *History) warnf(format string, args ...any) {
	if h.opts.Warn != nil {
		h.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// add appends snaps to the history (h.mu held, or h not shared yet).
func (h *History) add(snaps []Snapshot) {
	for i := range snaps {
		s := snaps[i].clone()
		h.snaps = append(h.snaps, s)
		for path, b := range s.Files {
			h.versions[path] = max(h.versions[path], b.Version)
		}
	}
}

// BackupName is the name of a file's backup: the first 16 hex digits of
// the SHA-256 of its absolute path, "@v", and the version, as Claude Code
// names them.
func BackupName(path string, version int) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:8]) + "@v" + strconv.Itoa(version)
}

// Snapshots returns copies of the snapshots, oldest first.
func (h *History) Snapshots() []Snapshot {
	h.lock()
	defer h.mu.Unlock()
	out := make([]Snapshot, len(h.snaps))
	for i, s := range h.snaps {
		out[i] = *s.clone()
	}
	return out
}

// Snapshot returns the snapshot of a message.
func (h *History) Snapshot(messageID string) (Snapshot, bool) {
	h.lock()
	defer h.mu.Unlock()
	if i := h.find(messageID); i >= 0 {
		return *h.snaps[i].clone(), true
	}
	return Snapshot{}, false
}

func (h *History) find(messageID string) int {
	for i := len(h.snaps) - 1; i >= 0; i-- {
		if h.snaps[i].MessageID == messageID {
			return i
		}
	}
	return -1
}

// Prompt takes the snapshot of a user message: every tracked file as it is
// now, backed up again if it changed since its last backup. It is called
// when the message is recorded, before the model sees it. A file that
// cannot be backed up is left out of the snapshot with a warning; the
// error is about recording the snapshot. On a history whose snapshots are
// still being read (OpenLater), it returns at once: the snapshot is taken
// and recorded once they are in, an error recording it is a warning.
func (h *History) Prompt(ctx context.Context, messageID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.ready:
	default:
		h.pending = append(h.pending, messageID)
		return nil
	}
	if h.off {
		return nil
	}
	s := h.capture(messageID)
	h.snaps = append(h.snaps, s)
	return h.record(ctx, s, false)
}

// capture returns a snapshot of every tracked file as it is now.
func (h *History) capture(messageID string) *Snapshot {
	s := &Snapshot{MessageID: messageID, Time: h.opts.Now(), Files: make(map[string]Backup)}
	for path, prev := range h.tracked() {
		same, err := h.unchanged(path, prev)
		if err == nil && same {
			s.Files[path] = prev
			continue
		}
		b, err := h.backup(path)
		if err != nil {
			cause, _ := fsfault.Describe(err)
			h.warnOnce("capture:"+path, fmt.Sprintf("file history could not back up %s: %s (%v); rewinding to this message will leave it as it is", path, cause, err))
			continue
		}
		s.Files[path] = b
	}
	return s
}

// tracked returns every file any snapshot names, with its newest backup.
func (h *History) tracked() map[string]Backup {
	out := make(map[string]Backup)
	for _, s := range h.snaps {
		maps.Copy(out, s.Files)
	}
	return out
}

// BeforeChange backs path up before a tool changes or creates it, unless
// the current snapshot already holds it (one backup per file per turn).
// It fits tool.Env.BeforeChange. Before the first snapshot there is
// nothing to attach a backup to, and it does nothing.
func (h *History) BeforeChange(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("file history needs an absolute path, not %q", path)
	}
	path = filepath.Clean(path)
	h.lock()
	defer h.mu.Unlock()
	if len(h.snaps) == 0 {
		return nil
	}
	cur := h.snaps[len(h.snaps)-1]
	if _, ok := cur.Files[path]; ok {
		return nil
	}
	b, err := h.backup(path)
	if err != nil {
		cause, advice := fsfault.Describe(err)
		msg := fmt.Sprintf("file history could not back up %s: %s (%v); the change was not made", path, cause, err)
		if advice != "" {
			msg += "; " + advice + " and ask again"
		}
		h.warnOnce("change:"+path+":"+cause, msg)
		return err
	}
	cur.Files[path] = b
	return h.record(context.Background(), cur, true)
}

// backup copies path to its next version, or notes that it does not exist.
func (h *History) backup(path string) (Backup, error) {
	v := h.nextVersion(path)
	b := Backup{Version: v, Time: h.opts.Now()}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		h.versions[path] = v
		return b, nil
	case err != nil:
		return Backup{}, err
	case !fi.Mode().IsRegular():
		return Backup{}, fmt.Errorf("%s is not a regular file and cannot be backed up", path)
	}
	b.Name = BackupName(path, v)
	if err := copyFile(path, filepath.Join(h.opts.Dir, b.Name), fi.Mode().Perm()); err != nil {
		return Backup{}, fmt.Errorf("back up %s: %w", path, err)
	}
	h.versions[path] = v
	return b, nil
}

// nextVersion is the version path's next backup takes: the one after the
// newest the snapshots name, past any whose backup file is in the folder
// already. Those are another snapshot's, one the history does not hold
// (a transcript line it could not read): a backup never replaces one.
func (h *History) nextVersion(path string) int {
	v := h.versions[path] + 1
	for {
		if _, err := os.Lstat(filepath.Join(h.opts.Dir, BackupName(path, v))); err != nil {
			return v // absent, or the copy finds out what is wrong
		}
		v++
	}
}

// unchanged reports whether path is as its backup b holds it: content and
// mode, or absent when b says it did not exist.
func (h *History) unchanged(path string, b Backup) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return !b.Exists(), nil
	}
	if err != nil {
		return false, err
	}
	if !b.Exists() {
		return false, nil
	}
	bfi, err := os.Stat(filepath.Join(h.opts.Dir, b.Name))
	if err != nil || bfi.Size() != fi.Size() || bfi.Mode().Perm() != fi.Mode().Perm() {
		return false, nil // a missing backup is made again
	}
	return sameContent(path, filepath.Join(h.opts.Dir, b.Name))
}

// record writes a snapshot to the transcript.
func (h *History) record(ctx context.Context, s *Snapshot, update bool) error {
	if h.opts.Record == nil {
		return nil
	}
	e, err := SnapshotEntry(*s, update)
	if err != nil {
		return err
	}
	if err := h.opts.Record(ctx, e); err != nil {
		return fmt.Errorf("record the file-history snapshot of %s: %w", s.MessageID, err)
	}
	return nil
}

func (h *History) warnOnce(key, msg string) {
	if h.warned[key] {
		return
	}
	h.warned[key] = true
	if h.opts.Warn != nil {
		h.opts.Warn(msg)
	}
}

// Close removes the shadow copy of the project, which only this process
// can use, once the snapshots are in (see OpenLater). Backups and
// snapshots stay.
func (h *History) Close() error {
	h.lock()
	sh := h.shadow
	h.shadow = nil
	h.mu.Unlock()
	if sh == nil {
		return nil
	}
	return sh.remove()
}

// copyFile copies src to dst with mode perm, atomically: dst never holds
// part of the content.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(dst, perm, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// writeAtomic writes dst through a temporary file in the same folder.
func writeAtomic(dst string, perm fs.FileMode, fill func(io.Writer) error) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	err = fill(tmp)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// sameContent reports whether two files hold the same bytes.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		aEnd := ea == io.EOF || ea == io.ErrUnexpectedEOF
		bEnd := eb == io.EOF || eb == io.ErrUnexpectedEOF
		if ea != nil && !aEnd {
			return false, ea
		}
		if eb != nil && !bEnd {
			return false, eb
		}
		if aEnd || bEnd {
			return aEnd && bEnd, nil
		}
	}
}
