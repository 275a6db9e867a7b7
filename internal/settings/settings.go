// Package settings reads cairn's layered JSON settings: the user's file in
// the cairn home, then the project's Claude Code files, then the project's
// cairn files, each later file overriding the keys it sets.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// Defaults of the settings this package interprets.
const (
	DefaultCleanupPeriodDays  = 30
	DefaultTrashRetentionDays = 30
)

// Settings is the merged view of every settings file that applies to a
// project.
type Settings struct {
	// CleanupPeriodDays is how many days a session may sit idle before
	// retention moves it to the trash (setting "cleanupPeriodDays").
	CleanupPeriodDays int
	// TrashRetentionDays is how many days a session stays in the trash
	// before it is deleted for good (setting "trashRetentionDays").
	TrashRetentionDays int
	// Raw holds every top-level key of the merged files, as written.
	Raw map[string]json.RawMessage
	// Source names, for each key of Raw, the file whose value won.
	Source map[string]string
	// Files lists the files that exist and were read, lowest priority first.
	Files []string
	// Warnings describe files that exist but were skipped: they are not
	// valid JSON, and nothing in them restricts what cairn may do.
	Warnings []string
}

// Paths returns the settings files for a project, lowest priority first:
// the user's settings.json in the cairn home, then the project's
// .claude/settings.json and .claude/settings.local.json, then its
// .cairn/settings.json and .cairn/settings.local.json. An empty home or
// project leaves out that level.
func Paths(homeDir, projectDir string) []string {
	var ps []string
	if homeDir != "" {
		ps = append(ps, filepath.Join(homeDir, "settings.json"))
	}
	if projectDir != "" {
		for _, d := range []string{".claude", ".cairn"} {
			ps = append(ps,
				filepath.Join(projectDir, d, "settings.json"),
				filepath.Join(projectDir, d, "settings.local.json"))
		}
	}
	return ps
}

// Load reads and merges the settings files of Paths(homeDir, projectDir).
// Missing files are skipped. The merge is by top-level key: a later file's
// value replaces an earlier one's whole. A file that is not a JSON object
// is skipped with a warning naming the file, line and column, unless it
// may hold a setting that restricts what cairn may do (a deny or ask
// rule, a default mode, a PreToolUse hook, how long sessions are kept):
// skipping that one could let cairn do what the user forbade, so it is an
// error. A known key with a value of the wrong kind is an error naming
// the file.
//
// The extra files (--settings) come after the project's, above them.
func Load(homeDir, projectDir string, extra ...string) (*Settings, error) {
	s := &Settings{
		Raw:    make(map[string]json.RawMessage),
		Source: make(map[string]string),
	}
	for _, p := range append(Paths(homeDir, projectDir), extra...) {
		fields, ok, warning, err := readFile(p)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			s.Warnings = append(s.Warnings, warning)
		}
		if !ok {
			continue
		}
		s.Files = append(s.Files, p)
		for k, v := range fields {
			s.Raw[k] = v
			s.Source[k] = p
		}
	}
	var err error
	if s.CleanupPeriodDays, err = s.days("cleanupPeriodDays", DefaultCleanupPeriodDays); err != nil {
		return nil, err
	}
	if s.TrashRetentionDays, err = s.days("trashRetentionDays", DefaultTrashRetentionDays); err != nil {
		return nil, err
	}
	return s, nil
}

// readFile decodes one settings file; ok is false when it does not exist
// or is skipped (warning says why). An empty file counts as an empty
// object.
func readFile(path string) (fields map[string]json.RawMessage, ok bool, warning string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, "", nil
	}
	if err != nil {
		return nil, false, "", fmt.Errorf("read settings: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]json.RawMessage{}, true, "", nil
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		fe := fileError(path, b, err)
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field == "" {
			fe.Err = fmt.Errorf("it holds %s where a JSON object {...} must be", te.Value)
		}
		warning, err := unreadable(fe, b)
		return nil, false, warning, err
	}
	if fields == nil { // the file holds null
		fields = map[string]json.RawMessage{}
	}
	return fields, true, "", nil
}

// days decodes a whole number of days ≥ 0 stored under key, or returns def
// when no file sets it.
func (s *Settings) days(key string, def int) (int, error) {
	raw, ok := s.Raw[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, fmt.Errorf("setting %q in %s is %s; it must be a whole number of days, 0 or more", key, s.Source[key], raw)
	}
	return int(f), nil
}
