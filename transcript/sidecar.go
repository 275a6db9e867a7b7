package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"
)

// Sidecars keeps the files stored beside a session's transcript, in Claude
// Code's layout of the session's sidecar folder: large tool results under
// "tool-results/", subagent transcripts under "subagents/", session notes.
// A name is a slash-separated path relative to that folder, with no empty,
// "." or ".." element. Implementations are safe for concurrent use.
//
// A Store that keeps sidecar files implements Sidecars too; Remove of a
// session removes its sidecar files.
type Sidecars interface {
	// WriteSidecar stores data under name, replacing what was there. A
	// reader sees either the old or the new content, never a mix.
	WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error
	// ReadSidecar returns what is stored under name; a missing file returns
	// an error wrapping ErrNotFound.
	ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error)
	// ListSidecars returns the names stored for the session, sorted; a
	// session without sidecar files gives an empty list and no error.
	ListSidecars(ctx context.Context, sessionID string) ([]string, error)
}

// ValidSidecarName checks a sidecar name against the contract of
// Sidecars: relative, slash-separated, with no empty, "." or ".." element
// and no backslash or NUL, so it can never leave the session's folder.
func ValidSidecarName(name string) error {
	if name == "" {
		return errors.New("empty sidecar name")
	}
	if strings.ContainsAny(name, "\\\x00") || strings.HasPrefix(name, "/") {
		return fmt.Errorf("invalid sidecar name %q: give a relative, slash-separated name", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("invalid sidecar name %q: no element may be empty, \".\" or \"..\"", name)
		}
	}
	return nil
}

// SidecarDir returns the folder on disk holding sessionID's sidecar files
// when s keeps them there (a FileStore), else "" — a store that keeps
// them elsewhere (in memory, in a database) has no such folder.
func SidecarDir(s Store, sessionID string) string {
	if d, ok := s.(interface{ SidecarDir(string) string }); ok {
		return d.SidecarDir(sessionID)
	}
	return ""
}

// WriteSidecar implements Sidecars: the file <dir>/<sessionId>/<name>
// (mode 0600, its folders 0700) is replaced whole through a rename.
func (s *FileStore) WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	path, err := s.sidecarPath(sessionID, name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the session's folder: %w", err)
	}
	if err := renameio.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadSidecar implements Sidecars.
func (s *FileStore) ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error) {
	path, err := s.sidecarPath(sessionID, name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	return b, err
}

// ListSidecars implements Sidecars: the regular files under the session's
// folder, without the temporary files of a write under way.
func (s *FileStore) ListSidecars(ctx context.Context, sessionID string) ([]string, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	root := s.SidecarDir(sessionID)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// SidecarDir is the folder of sessionID's sidecar files, <dir>/<sessionId>.
func (s *FileStore) SidecarDir(sessionID string) string { return filepath.Join(s.dir, sessionID) }

func (s *FileStore) sidecarPath(sessionID, name string) (string, error) {
	if err := validID(sessionID); err != nil {
		return "", err
	}
	if err := ValidSidecarName(name); err != nil {
		return "", err
	}
	return filepath.Join(s.SidecarDir(sessionID), filepath.FromSlash(name)), nil
}

// WriteSidecar implements Sidecars.
func (s *MemStore) WriteSidecar(ctx context.Context, sessionID, name string, data []byte) error {
	if err := validSidecar(sessionID, name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sidecars[sessionID] == nil {
		s.sidecars[sessionID] = make(map[string][]byte)
	}
	s.sidecars[sessionID][name] = bytes.Clone(data)
	return nil
}

// ReadSidecar implements Sidecars.
func (s *MemStore) ReadSidecar(ctx context.Context, sessionID, name string) ([]byte, error) {
	if err := validSidecar(sessionID, name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.sidecars[sessionID][name]
	if !ok {
		return nil, fmt.Errorf("session %s, %s: %w", sessionID, name, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// ListSidecars implements Sidecars.
func (s *MemStore) ListSidecars(ctx context.Context, sessionID string) ([]string, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sidecars[sessionID]))
	for name := range s.sidecars[sessionID] {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

func validSidecar(sessionID, name string) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	return ValidSidecarName(name)
}
