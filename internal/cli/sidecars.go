package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

// localSidecars is the one reader and writer of a session's sidecar
// files on this disk, as the team store exchanges them: the files of the
// session's sidecar folder (<project folder>/<id>/: tool-results/,
// subagents/, …), through the project's FileStore, under their relative
// names; and the session's file-history backups (<home>/file-history/<id>/)
// under pgstore.FileHistoryPrefix. Names with an element starting with
// "." (an atomic write's temporary file) and a sidecar folder's own
// "file-history" folder, which would collide with the prefix, are left
// out.
type localSidecars struct {
	files   *transcript.FileStore // the project folder holding <id>.jsonl and <id>/
	history string                // the home's file-history folder
}

var _ transcript.Sidecars = localSidecars{}

// sidecarsOf returns the sidecar files of the sessions whose transcripts
// are in projectDir.
func sidecarsOf(home session.Home, projectDir string) localSidecars {
	return localSidecars{files: transcript.NewFileStore(projectDir), history: filepath.Dir(home.FileHistory("-"))}
}

// historyPath is the backup a file-history name stands for; ok is false
// for a name of the session's folder.
func (l localSidecars) historyPath(sessionID, name string) (p string, ok bool, err error) {
	if sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return "", false, fmt.Errorf("invalid session id %q", sessionID)
	}
	if err := transcript.ValidSidecarName(name); err != nil {
		return "", false, err
	}
	rest, ok := strings.CutPrefix(name, pgstore.FileHistoryPrefix)
	if !ok {
		if strings.HasPrefix(name+"/", pgstore.FileHistoryPrefix) {
			return "", false, fmt.Errorf("invalid sidecar file name %q", name)
		}
		return "", false, nil
	}
	return filepath.Join(l.history, sessionID, filepath.FromSlash(rest)), true, nil
}

func (l localSidecars) ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error) {
	p, ok, err := l.historyPath(sessionID, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return l.files.ReadSidecar(ctx, sessionID, name)
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, transcript.ErrNotFound)
	}
	return b, err
}

// WriteSidecar writes atomically (mode 0600, folders 0700).
func (l localSidecars) WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	p, ok, err := l.historyPath(sessionID, name)
	if err != nil {
		return err
	}
	if !ok {
		return l.files.WriteSidecar(ctx, sessionID, name, data)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := renameio.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func (l localSidecars) ListSidecars(ctx context.Context, sessionID string) ([]string, error) {
	if _, _, err := l.historyPath(sessionID, "x"); err != nil {
		return nil, err
	}
	all, err := l.files.ListSidecars(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, n := range all {
		if !strings.HasPrefix(n, pgstore.FileHistoryPrefix) && !hiddenName(n) {
			names = append(names, n)
		}
	}
	root := filepath.Join(l.history, sessionID)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		switch {
		case p == root:
			return nil
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		names = append(names, pgstore.FileHistoryPrefix+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// hiddenName reports whether an element of a sidecar name starts with ".".
func hiddenName(name string) bool {
	for el := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(el, ".") {
			return true
		}
	}
	return false
}
