package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/internal/jsonl"
)

// FileStore keeps transcripts as <dir>/<sessionId>.jsonl files (mode 0600),
// with each session's sidecar folder <dir>/<sessionId>/ — Claude Code's
// layout of one project folder.
type FileStore struct {
	dir string
}

// NewFileStore returns a store rooted at dir, which is created on first
// write.
func NewFileStore(dir string) *FileStore { return &FileStore{dir: dir} }

// Dir returns the store's folder.
func (s *FileStore) Dir() string { return s.dir }

// Path returns the transcript file of sessionID.
func (s *FileStore) Path(sessionID string) string {
	return filepath.Join(s.dir, sessionID+".jsonl")
}

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return fmt.Errorf("invalid session id %q", id)
	}
	return nil
}

// OpenAppender implements Store. The lock is an advisory flock(2) on the
// transcript file itself, so it needs no extra file and dies with the
// process.
func (s *FileStore) OpenAppender(ctx context.Context, sessionID string) (Appender, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the project folder: %w", err)
	}
	path := s.Path(sessionID)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	lock := flock.New(path)
	ok, err := lock.TryLock()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock transcript %s: %w", path, err)
	}
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrLocked)
	}
	torn, err := jsonl.EndsMidLine(f)
	if err != nil {
		lock.Close()
		f.Close()
		return nil, err
	}
	return &fileAppender{f: f, path: path, lock: lock, needNewline: torn}, nil
}

type fileAppender struct {
	f           *os.File
	path        string
	lock        *flock.Flock
	needNewline bool
}

// same checks that the file at the appender's path is still the one it
// opened: one deleted, or replaced by another (a copy put back, a restore),
// gets no more lines.
func (a *fileAppender) same() error {
	open, err := a.f.Stat()
	if err != nil {
		return err
	}
	now, err := os.Stat(a.path)
	if err != nil || !os.SameFile(open, now) {
		return fmt.Errorf("write transcript %s: %w", a.path, fsfault.ErrReplaced)
	}
	return nil
}

func (a *fileAppender) Append(ctx context.Context, entries []Entry, durable bool) error {
	if a.f == nil {
		return errors.New("append to a closed transcript")
	}
	if len(entries) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.same(); err != nil {
		return err
	}
	buf, err := encodeLines(entries, a.needNewline)
	if err != nil {
		return err
	}
	// One write(2) of whole lines: O_APPEND places it at the end even if
	// the file grew, and a crash leaves at most one partial last line.
	if _, err := a.f.Write(buf); err != nil {
		a.needNewline = true
		return fmt.Errorf("write transcript: %w", err)
	}
	a.needNewline = false
	if durable {
		if err := a.f.Sync(); err != nil {
			return fmt.Errorf("sync transcript: %w: %w", ErrNotSynced, err)
		}
	}
	return nil
}

func (a *fileAppender) Close() error {
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	if lerr := a.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// OpenSource implements Store.
func (s *FileStore) OpenSource(ctx context.Context, sessionID string) (Source, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	return OpenFile(s.Path(sessionID))
}

// OpenFile opens a transcript file by path as a Source. The size is fixed
// at open: lines appended later are not seen. Entries Load reads from it
// may leave their large toolUseResults in the file (see Entry.Result),
// read back later by path after the source is closed; they can be as
// long as the file is not replaced.
func OpenFile(path string) (Source, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missingFile{path, err}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a folder, not a transcript", path)
	}
	fs := &fileSource{f: f, size: st.Size(), id: fileIdentity(st)}
	if abs, err := filepath.Abs(path); err == nil && fs.id != "" {
		fs.ref = &fileRef{path: abs, id: fs.id}
	}
	return fs, nil
}

// missingFile is OpenFile's error for a file that does not exist: it is
// both ErrNotFound and the file system's fs.ErrNotExist.
type missingFile struct {
	path string
	err  error
}

func (e missingFile) Error() string   { return e.path + ": " + ErrNotFound.Error() }
func (e missingFile) Unwrap() []error { return []error{ErrNotFound, e.err} }

type fileSource struct {
	f    *os.File
	size int64
	id   string
	ref  *fileRef // nil where the platform gives no identity
}

// fileRef implements reopener: results a load leaves in the file are read
// back by path, the file's identity checked.
func (s *fileSource) fileRef() *fileRef { return s.ref }

// Identity implements Identified: the file's device and inode.
func (s *fileSource) Identity() string { return s.id }

func (s *fileSource) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	if rest := s.size - off; int64(len(p)) > rest {
		n, err := s.f.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.f.ReadAt(p, off)
}

// mapFrom implements mapper.
func (s *fileSource) mapFrom(off int64) *filemap.Region {
	if s.size-off < mapMin {
		return nil
	}
	r, err := filemap.Map(s.f, off, s.size)
	if err != nil {
		return nil // the entries keep copies
	}
	return r
}

func (s *fileSource) Size() int64  { return s.size }
func (s *fileSource) Close() error { return s.f.Close() }

// Sessions implements Store.
func (s *FileStore) Sessions(ctx context.Context) ([]SessionInfo, error) {
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SessionInfo
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, SessionInfo{
			ID:      strings.TrimSuffix(name, ".jsonl"),
			Size:    info.Size(),
			ModTime: info.ModTime(),
			Path:    filepath.Join(s.dir, name),
		})
	}
	return out, ctx.Err()
}

// Remove implements Store.
func (s *FileStore) Remove(ctx context.Context, sessionID string) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	if err := os.Remove(s.Path(sessionID)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", s.Path(sessionID), ErrNotFound)
		}
		return err
	}
	return os.RemoveAll(filepath.Join(s.dir, sessionID))
}

// FileStoreOf returns the store of the folder holding the transcript file
// at path, and the file's name in it (the name without ".jsonl"): a
// transcript named by path is read and written through that store.
func FileStoreOf(path string) (*FileStore, string) {
	return NewFileStore(filepath.Dir(path)), strings.TrimSuffix(filepath.Base(path), ".jsonl")
}
