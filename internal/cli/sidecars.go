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
// subagents/, …) under their relative names, and the session's
// file-history backups (<home>/file-history/<id>/) under
// pgstore.FileHistoryPrefix. Files whose name starts with "." (an atomic
// write's temporary file), links and a sidecar folder's own
// "file-history" folder are left out.
//
// (It is a minimal local reader until transcript.FileStore implements
// transcript.Sidecars; then the sidecar folder's part goes through it.)
type localSidecars struct {
	dir     string // the project folder holding <id>.jsonl and <id>/
	history string // the home's file-history folder
}

var _ transcript.Sidecars = localSidecars{}

// sidecarsOf returns the sidecar files of the sessions whose transcripts
// are in projectDir.
func sidecarsOf(home session.Home, projectDir string) localSidecars {
	return localSidecars{dir: projectDir, history: filepath.Dir(home.FileHistory("-"))}
}

func (l localSidecars) path(sessionID, name string) (string, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return "", fmt.Errorf("invalid session id %q", sessionID)
	}
	if err := pgstore.ValidSidecarName(name); err != nil {
		return "", err
	}
	if rest, ok := strings.CutPrefix(name, pgstore.FileHistoryPrefix); ok {
		return filepath.Join(l.history, sessionID, filepath.FromSlash(rest)), nil
	}
	if strings.HasPrefix(name+"/", pgstore.FileHistoryPrefix) {
		return "", fmt.Errorf("invalid sidecar file name %q", name)
	}
	return filepath.Join(l.dir, sessionID, filepath.FromSlash(name)), nil
}

func (l localSidecars) ReadSidecar(_ context.Context, sessionID, name string) ([]byte, error) {
	p, err := l.path(sessionID, name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, transcript.ErrNotFound)
	}
	return b, err
}

// WriteSidecar writes atomically (mode 0600, folders 0700).
func (l localSidecars) WriteSidecar(_ context.Context, sessionID, name string, data []byte) error {
	p, err := l.path(sessionID, name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := renameio.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func (l localSidecars) ListSidecars(_ context.Context, sessionID string) ([]string, error) {
	if _, err := l.path(sessionID, "x"); err != nil {
		return nil, err
	}
	names := []string{}
	walk := func(root, prefix string) error {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			switch {
			case p == root:
				return nil
			case strings.HasPrefix(d.Name(), "."):
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case prefix == "" && rel+"/" == pgstore.FileHistoryPrefix:
				return filepath.SkipDir
			case !d.Type().IsRegular():
				return nil
			}
			names = append(names, prefix+rel)
			return nil
		})
		return err
	}
	if err := walk(filepath.Join(l.dir, sessionID), ""); err != nil {
		return nil, err
	}
	if err := walk(filepath.Join(l.history, sessionID), pgstore.FileHistoryPrefix); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}
