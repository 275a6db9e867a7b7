package cli

import (
	"os"
	"path/filepath"
	"strings"
)

// checkDirs checks that every --add-dir names a directory (relative ones
// are relative to cwd).
func checkDirs(cwd string, dirs []string) error {
	for _, d := range dirs {
		p := d
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); !strings.HasPrefix(p, "~") && (err != nil || !fi.IsDir()) {
			return usagef("--add-dir %s: no such directory; give a directory that exists", d)
		}
	}
	return nil
}
