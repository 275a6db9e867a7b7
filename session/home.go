package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/cairn-dev/cairn/transcript"
)

// Home is a cairn home folder: $CAIRN_HOME, or ~/.cairn. Pointing it at
// ~/.claude makes cairn work on Claude Code's own sessions.
type Home struct {
	Dir string
}

// DefaultHome returns the home named by $CAIRN_HOME, else ~/.cairn.
func DefaultHome() (Home, error) {
	if d := os.Getenv("CAIRN_HOME"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return Home{}, fmt.Errorf("CAIRN_HOME: %w", err)
		}
		return Home{Dir: abs}, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return Home{}, fmt.Errorf("no home folder (%v); set CAIRN_HOME to where cairn should keep its sessions", err)
	}
	return Home{Dir: filepath.Join(h, ".cairn")}, nil
}

// Projects is the folder holding one folder per project.
func (h Home) Projects() string { return filepath.Join(h.Dir, "projects") }

// Trash is where retention moves expired sessions before deleting them.
func (h Home) Trash() string { return filepath.Join(h.Dir, "trash") }

// HistoryFile is the prompt history shared by all projects.
func (h Home) HistoryFile() string { return filepath.Join(h.Dir, "history.jsonl") }

// FileHistory is the folder of a session's file backups.
func (h Home) FileHistory(sessionID string) string {
	return filepath.Join(h.Dir, "file-history", sessionID)
}

// SettingsFile is the user's settings.
func (h Home) SettingsFile() string { return filepath.Join(h.Dir, "settings.json") }

// ProjectDir is the folder of the project whose working directory is cwd.
// If a folder for a long cwd exists under another hash (Claude Code's Bun
// and Node builds hash differently), that folder is used.
func (h Home) ProjectDir(cwd string) string {
	name := ProjectDirName(cwd)
	dir := filepath.Join(h.Projects(), name)
	if len(name) <= maxDirName {
		return dir
	}
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	prefix := name[:maxDirName+1]
	ents, _ := os.ReadDir(h.Projects())
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			return filepath.Join(h.Projects(), e.Name())
		}
	}
	return dir
}

// Store returns the transcript store of the project at cwd.
func (h Home) Store(cwd string) *transcript.FileStore {
	return transcript.NewFileStore(h.ProjectDir(cwd))
}

const maxDirName = 200

// ProjectDirName is Claude Code's folder name for a working directory:
// every character outside [a-zA-Z0-9] becomes '-'; a name longer than 200
// characters is cut to 200 and followed by '-' and a hash of the cwd in
// base 36, so distinct long paths stay distinct.
func ProjectDirName(cwd string) string {
	var b strings.Builder
	n := 0
	for _, r := range cwd {
		// JavaScript replaces per UTF-16 unit: a rune outside the BMP is
		// two units, so two dashes.
		k := 1
		if r > 0xFFFF {
			k = 2
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteString(strings.Repeat("-", k))
		}
		n += k
	}
	name := b.String()
	if n <= maxDirName {
		return name
	}
	return name[:maxDirName] + "-" + strconv.FormatInt(javaHashAbs(cwd), 36)
}

// javaHashAbs is |h| for Java's String.hashCode over UTF-16 units
// (h = 31*h + c in 32-bit arithmetic), as Claude Code computes it.
func javaHashAbs(s string) int64 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = (h << 5) - h + int32(u)
	}
	v := int64(h)
	if v < 0 {
		v = -v
	}
	return v
}

// ErrNoSessions is returned by Latest when a project has no session.
var ErrNoSessions = errors.New("no sessions in this project")
