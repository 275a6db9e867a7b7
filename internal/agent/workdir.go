package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// The session's folder. Tools reach the files beside a session by path:
// the model reads a large result back with Read, edits the session notes
// with Edit, Bash keeps its background shells' output there. A FileStore
// keeps those files in the session's folder <project>/<sessionId>, and
// the session works in it. A store that keeps them elsewhere (in memory,
// in a database) gets a working copy instead: a private folder
// ($TMPDIR/cairn-<uid>-sessions/<store>-<id>/<id>, <store> a short hash
// naming the store, see storeTag) filled at start with what the
// store holds for the session, written through to the store (results,
// notes) and removed at Close. The store stays the record; the working
// copy is only where tools find the files.

// openDir sets the session's folder, making the working copy when the
// store has no folder of its own.
func (a *Agent) openDir(ctx context.Context) error {
	if dir := transcript.SidecarDir(a.store, a.id); dir != "" {
		a.dir = dir
		return nil
	}
	root, err := workRoot()
	if err != nil {
		return err
	}
	// The same folder on every run of the session, so the paths its
	// transcript names (a spilled result's) lead to the files again after
	// a resume. A run holds the session's lock, so only one uses it; what
	// a crashed run left is replaced by what the store holds.
	// The store's tag keeps apart the same id in two stores (two
	// projects, or two processes' memory stores).
	a.scratch = filepath.Join(root, storeTag(a.store)+"-"+a.id)
	a.dir = filepath.Join(a.scratch, a.id)
	if err := os.RemoveAll(a.scratch); err != nil {
		return fmt.Errorf("clear the session's working folder: %w", err)
	}
	names, err := a.sidecars.ListSidecars(ctx, a.id)
	if err != nil {
		a.closeDir()
		return fmt.Errorf("list the session's files: %w", err)
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		a.closeDir()
		return fmt.Errorf("make the session's working folder: %w", err)
	}
	work := transcript.NewFileStore(a.scratch)
	for _, name := range names {
		if strings.HasPrefix(name, SubagentsDir+"/") {
			continue // read through the store, never by path
		}
		if strings.HasPrefix(name, fileHistoryPrefix) {
			continue // the home's file backups, not the session folder's
		}
		b, err := a.sidecars.ReadSidecar(ctx, a.id, name)
		if errors.Is(err, transcript.ErrNotFound) {
			continue
		}
		if err == nil {
			err = work.WriteSidecar(ctx, a.id, name, b)
		}
		if err != nil {
			a.closeDir()
			return fmt.Errorf("copy the session's file %s: %w", name, err)
		}
	}
	return nil
}

// SessionDir is the session's folder, where its tools reach the files
// beside the transcript by path: the file store's own, or the working
// copy of a store that keeps them elsewhere (gone after Close).
func (a *Agent) SessionDir() string { return a.dir }

// fileHistoryPrefix starts the names under which a store keeps the
// session's file-history backups (pgstore.FileHistoryPrefix): they belong
// to the home, not to the session's folder.
const fileHistoryPrefix = "file-history/"

// storeTag is a short hash naming store: the same on every run for a
// store that names its project (the team store), so a resumed session's
// paths lead to its files again; otherwise unique to this process and
// store value (a memory store lives no longer than the process).
func storeTag(store transcript.Store) string {
	key := fmt.Sprintf("%T\x00%d\x00%p", store, os.Getpid(), store)
	if p, ok := store.(interface{ Project() string }); ok {
		key = fmt.Sprintf("%T\x00%s", store, p.Project())
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// workRoot is the user's folder of working copies,
// $TMPDIR/cairn-<uid>-sessions: made private (0700) and refused when it
// is not the user's own folder.
func workRoot() (string, error) {
	root := filepath.Join(os.TempDir(), fmt.Sprintf("cairn-%d-sessions", os.Getuid()))
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the sessions' working folder: %w; set TMPDIR to a writable folder", err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || (ok && int(st.Uid) != os.Getuid()) {
		return "", fmt.Errorf("%s is not a private folder of yours (it should be a folder, mode 0700); remove it, or set TMPDIR elsewhere", root)
	}
	return root, nil
}

// closeDir removes the working copy, if there is one. a.scratch stays
// set: it never changes once the session started, so the notes' update
// goroutine reads it without a lock.
func (a *Agent) closeDir() {
	if a.scratch != "" {
		os.RemoveAll(a.scratch)
	}
}

// keep is where files beside the session are written: the store, and the
// working copy as well when there is one.
func (a *Agent) keep() transcript.Sidecars {
	if a.scratch == "" {
		return a.sidecars
	}
	return teeSidecars{a.sidecars, transcript.NewFileStore(a.scratch)}
}

// offloadConfig spills the large results of the session's tools reg
// beside the session.
func (a *Agent) offloadConfig(reg *tool.Registry) compact.OffloadConfig {
	return compact.OffloadConfig{Dir: a.dir, Store: a.keep(), SessionID: a.id, Tools: reg, Warn: a.opts.Warn}
}

// notesSaved stores the session notes an update wrote at path (and their
// full copy) in a store without a folder of its own; in a FileStore the
// file is already the store's.
func (a *Agent) notesSaved(ctx context.Context, path string) {
	if a.scratch == "" {
		return
	}
	for _, p := range []string{path, strings.TrimSuffix(path, ".md") + ".full.md"} {
		rel, err := filepath.Rel(a.dir, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = a.sidecars.WriteSidecar(ctx, a.id, filepath.ToSlash(rel), b)
		}
		if err != nil && a.opts.Warn != nil {
			a.opts.Warn(fmt.Sprintf("session notes: could not store %s (%v); they are kept for this run only", rel, err))
		}
	}
}

// teeSidecars writes to the store and its working copy; it reads the
// store.
type teeSidecars struct {
	store, copy transcript.Sidecars
}

func (t teeSidecars) WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	if err := t.store.WriteSidecar(ctx, sessionID, name, data); err != nil {
		return err
	}
	return t.copy.WriteSidecar(ctx, sessionID, name, data)
}

func (t teeSidecars) ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error) {
	return t.store.ReadSidecar(ctx, sessionID, name)
}

func (t teeSidecars) ListSidecars(ctx context.Context, sessionID string) ([]string, error) {
	return t.store.ListSidecars(ctx, sessionID)
}
