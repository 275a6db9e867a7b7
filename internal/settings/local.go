package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// LocalPath is the project's own settings file that cairn writes to
// (a person's answers: "don't ask again" rules, approved MCP servers):
// .cairn/settings.local.json, which is not meant to be committed.
func LocalPath(project string) string {
	return filepath.Join(project, ".cairn", "settings.local.json")
}

// EditLocal changes the project's local settings: edit gets the file's
// top-level fields (none when it does not exist yet) to change in place.
// Everything edit leaves alone is kept, and the file is replaced
// atomically, so a crash leaves the old file or the new one. Edits by
// other cairn processes wait for this one (the folder is locked from the
// read to the write), so none is lost. A file that is not a JSON object
// is left as it is, with an error saying so.
func EditLocal(project string, edit func(doc map[string]json.RawMessage) error) error {
	path := LocalPath(project)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	lock := flock.New(filepath.Dir(path), flock.SetFlag(os.O_RDONLY))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", filepath.Dir(path), err)
	}
	defer lock.Close()
	doc := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	case len(strings.TrimSpace(string(b))) > 0:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s is not valid JSON (%v); fix it, then try again", path, err)
		}
		if doc == nil { // the file holds null
			doc = map[string]json.RawMessage{}
		}
	}
	if err := edit(doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Written as Claude Code writes it: indented, and "&&" as it is, not
	// "\u0026\u0026".
	flat, err := jsonw.Marshal(doc)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return err
	}
	if err := renameio.WriteFile(path, append(out.Bytes(), '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
