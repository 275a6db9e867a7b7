package filehistory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CopyBackups brings the backups of one session's folder into another's,
// so a session continued as a new one can rewind to the old one's
// messages. Backups are never written after they are made, so they are
// hard-linked where the file system allows and copied elsewhere; backups
// already in to are left alone, and a missing from copies nothing. It
// returns how many backups it brought.
func CopyBackups(from, to string) (int, error) {
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("copy file history: %w", err)
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return 0, fmt.Errorf("copy file history: %w", err)
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.Contains(e.Name(), "@v") {
			continue // the shadow folder, temporary files
		}
		dst := filepath.Join(to, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		src := filepath.Join(from, e.Name())
		if os.Link(src, dst) != nil {
			fi, err := e.Info()
			if err != nil {
				return n, fmt.Errorf("copy file history: %w", err)
			}
			if err := copyFile(src, dst, fi.Mode().Perm()); err != nil {
				return n, fmt.Errorf("copy file history: %w", err)
			}
		}
		n++
	}
	return n, nil
}
