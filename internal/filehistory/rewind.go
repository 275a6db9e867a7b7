package filehistory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/aymanbagabas/go-udiff"
)

// ErrNoSnapshot is returned when a message has no file-history snapshot:
// it is not a user message of this session, or the session was recorded
// without file history.
var ErrNoSnapshot = errors.New("no file-history snapshot for this message")

// Action is what rewinding does to one file.
type Action string

// The actions of a rewind.
const (
	// Restore overwrites the file with its backup.
	Restore Action = "restore"
	// Recreate brings back a file deleted since the message.
	Recreate Action = "recreate"
	// Delete removes a file created since the message.
	Delete Action = "delete"
)

// Change is what rewinding does to one file.
type Change struct {
	Path   string `json:"path"`
	Action Action `json:"action"`
	// Backup is the backup file the content comes from; empty for Delete.
	Backup string `json:"backup,omitempty"`
	// Added and Removed count the lines the change adds to and removes
	// from the file as it is now.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary is set when either side is not text; the counts are then 0.
	Binary bool `json:"binary,omitempty"`
	// ModeOnly is set when only the file's permissions change.
	ModeOnly bool `json:"modeOnly,omitempty"`
}

// Plan is what rewinding the code to a message would change; files
// already as they were are left out.
type Plan struct {
	MessageID string   `json:"messageId"`
	Changes   []Change `json:"changes"`
}

// Plan says what rewinding the code to the state when messageID was sent
// would change, without changing anything. A file first tracked after the
// message goes back to its state when it was first tracked (its state
// then is its state at the message, unless something else changed it).
func (h *History) Plan(messageID string) (*Plan, error) {
	h.lock()
	defer h.mu.Unlock()
	return h.plan(messageID)
}

func (h *History) plan(messageID string) (*Plan, error) {
	i := h.find(messageID)
	if i < 0 {
		return nil, fmt.Errorf("message %q: %w", messageID, ErrNoSnapshot)
	}
	target := make(map[string]Backup)
	for _, s := range h.snaps[i:] {
		for path, b := range s.Files {
			if _, ok := target[path]; !ok {
				target[path] = b
			}
		}
	}
	paths := make([]string, 0, len(target))
	for p := range target {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	p := &Plan{MessageID: messageID, Changes: []Change{}}
	for _, path := range paths {
		c, changed, err := h.compare(path, target[path])
		if err != nil {
			return nil, err
		}
		if changed {
			p.Changes = append(p.Changes, c)
		}
	}
	return p, nil
}

// compare says what bringing path back to b changes.
func (h *History) compare(path string, b Backup) (Change, bool, error) {
	c := Change{Path: path, Backup: b.Name}
	cur, curErr := os.ReadFile(path)
	exists := curErr == nil
	if curErr != nil && !errors.Is(curErr, fs.ErrNotExist) {
		if isDirError(path) {
			return c, false, fmt.Errorf("%s is now a folder; move it away and rewind again", path)
		}
		return c, false, fmt.Errorf("read %s: %w", path, curErr)
	}
	if !b.Exists() {
		if !exists {
			return c, false, nil
		}
		c.Action = Delete
		c.Added, c.Removed, c.Binary = lineStat(cur, nil)
		return c, true, nil
	}
	bpath := filepath.Join(h.opts.Dir, b.Name)
	want, err := os.ReadFile(bpath)
	if err != nil {
		return c, false, fmt.Errorf("the backup of %s (%s) cannot be read: %w; that file cannot be rewound", path, bpath, err)
	}
	bfi, err := os.Stat(bpath)
	if err != nil {
		return c, false, err
	}
	if !exists {
		c.Action = Recreate
		c.Added, c.Removed, c.Binary = lineStat(nil, want)
		return c, true, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return c, false, err
	}
	same := bytes.Equal(cur, want)
	if same && fi.Mode().Perm() == bfi.Mode().Perm() {
		return c, false, nil
	}
	c.Action, c.ModeOnly = Restore, same
	c.Added, c.Removed, c.Binary = lineStat(cur, want)
	return c, true, nil
}

func isDirError(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Rewind brings the tracked files back to their state when messageID was
// sent. First, when undoID is not empty, the current state of every
// tracked file is recorded as the snapshot undoID, so rewinding to undoID
// undoes this rewind. A file that cannot be rewound does not stop the
// others; the error lists them.
func (h *History) Rewind(ctx context.Context, messageID, undoID string) (*Plan, error) {
	h.lock()
	defer h.mu.Unlock()
	p, err := h.plan(messageID)
	if err != nil {
		return nil, err
	}
	if len(p.Changes) == 0 {
		return p, nil
	}
	if undoID != "" {
		s := h.capture(undoID)
		h.snaps = append(h.snaps, s)
		if err := h.record(ctx, s, false); err != nil {
			return nil, fmt.Errorf("nothing was rewound: %w", err)
		}
	}
	var errs []error
	for _, c := range p.Changes {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := h.apply(c); err != nil {
			errs = append(errs, err)
		}
	}
	return p, errors.Join(errs...)
}

// apply makes one change of a plan.
func (h *History) apply(c Change) error {
	if c.Action == Delete {
		if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("delete %s: %w; make its folder writable (chmod u+w %s) and rewind again", c.Path, err, filepath.Dir(c.Path))
			}
			return fmt.Errorf("delete %s: %w", c.Path, err)
		}
		return nil
	}
	src := filepath.Join(h.opts.Dir, c.Backup)
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("restore %s: %w", c.Path, err)
	}
	// Write through a symbolic link to its target, as the editing tools do.
	target := c.Path
	if resolved, err := filepath.EvalSymlinks(c.Path); err == nil {
		target = resolved
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("restore %s: %w", c.Path, err)
	}
	if err := copyFile(src, target, fi.Mode().Perm()); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("restore %s: %w; make its folder writable (chmod u+w %s) and rewind again", c.Path, err, filepath.Dir(target))
		}
		return fmt.Errorf("restore %s: %w", c.Path, err)
	}
	return nil
}

// lineStat counts the lines going from before to after adds and removes;
// binary is set, with no counts, when either is not text.
func lineStat(before, after []byte) (added, removed int, binary bool) {
	if isBinary(before) || isBinary(after) {
		return 0, 0, true
	}
	for _, e := range udiff.Lines(string(before), string(after)) {
		removed += countLines(string(before[e.Start:e.End]))
		added += countLines(e.New)
	}
	return added, removed, false
}

func countLines(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	if len(s) > 0 && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// isBinary guesses that data is not text when its start holds a NUL byte.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}
