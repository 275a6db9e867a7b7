package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned when no session matches a reference.
var ErrNotFound = errors.New("no such session")

// Find resolves a session reference — a transcript path, or a session id —
// to a transcript file. An id is looked up in the project of cwd first,
// then in every project, as Claude Code's --resume does.
func (h Home) Find(cwd, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("empty session reference")
	}
	if strings.HasSuffix(ref, ".jsonl") || strings.ContainsRune(ref, filepath.Separator) {
		st, err := os.Stat(ref)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%q: %w (no such file)", ref, ErrNotFound)
			}
			return "", err
		}
		if st.IsDir() {
			return "", fmt.Errorf("%q is a folder; give a transcript file or a session id", ref)
		}
		return filepath.Abs(ref)
	}
	name := ref + ".jsonl"
	if cwd != "" {
		p := filepath.Join(h.ProjectDir(cwd), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	matches, _ := filepath.Glob(filepath.Join(h.Projects(), "*", name))
	if len(matches) > 0 {
		return matches[0], nil
	}
	return "", fmt.Errorf("session %q: %w under %s; `cairn sessions list --all` shows the sessions there are", ref, ErrNotFound, h.Projects())
}
