package instructions

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Tracker is one session's view of its instruction files: what the model
// was shown (and with what content), which nested folders and rules the
// agent's work brought in, and what changed on disk since. Safe for
// concurrent use (tool calls run in parallel).
type Tracker struct {
	o Options

	mu     sync.Mutex
	set    *Set
	conds  []File            // rules with globs found in nested folders
	active []File            // nested files and rules in force, in load order
	stamps map[string]stamp  // of active files
	shown  map[string]string // path → Hash of the content the model holds
	looked map[string]bool   // nested folders already looked at
}

// NewTracker loads the instruction files for o.Cwd.
func NewTracker(o Options) *Tracker {
	o.defaults()
	return &Tracker{o: o, set: Load(o), stamps: map[string]stamp{}, shown: map[string]string{}, looked: map[string]bool{}}
}

// Set returns what loads at the start, as last loaded.
func (t *Tracker) Set() *Set {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set
}

// Start returns the files a new session's first prompt carries and
// records that the model was shown them.
func (t *Tracker) Start() []File {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.set.Files {
		t.shown[f.Path] = f.Hash()
	}
	return slices.Clone(t.set.Files)
}

// Saw records that the model holds path with the content of hash (read
// back from a resumed session's transcript).
func (t *Tracker) Saw(path, hash string) {
	t.mu.Lock()
	t.shown[path] = hash
	t.mu.Unlock()
}

// Shown returns what the model holds: path → content hash.
func (t *Tracker) Shown() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.shown)
}

// Touch is told of a file the agent reads or changes. It returns the
// instruction files that now apply and were not shown yet: those of the
// folders between the working directory and the file (nested
// instructions), and rules whose paths: globs match the file. They are
// recorded as shown.
func (t *Tracker) Touch(path string) []File {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.o.Cwd, path)
	}
	path = filepath.Clean(path)
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []File
	if dir := filepath.Dir(path); within(dir, t.o.Cwd) && dir != t.o.Cwd {
		for _, d := range walk(t.o.Cwd, dir)[1:] {
			if t.looked[d] {
				continue
			}
			t.looked[d] = true
			l := t.loader(false)
			l.folder(d, true, path)
			t.conds = append(t.conds, l.set.Conditional...)
			out = append(out, t.adopt(l.set.Files)...)
		}
	}
	for _, r := range append(slices.Clone(t.set.Conditional), t.conds...) {
		if _, done := t.shown[r.Path]; done {
			continue
		}
		glob, ok := r.Matches(path)
		if !ok {
			continue
		}
		l := t.loader(true)
		l.loadRule(r.Path, r.Kind, r.Base, fmt.Sprintf("%s; applies since %s matched its paths: %s", r.Reason, path, glob), r.Nested)
		out = append(out, t.adopt(l.set.Files)...)
	}
	return out
}

// loader returns a loader that skips every file already in force.
func (t *Tracker) loader(activate bool) *loader {
	l := newLoader(t.o)
	l.activate = activate
	mark := func(p string) {
		if l.seen[p] {
			return
		}
		l.seen[p] = true
		if fi, err := os.Stat(p); err == nil {
			l.infos = append(l.infos, fi)
		}
	}
	for p := range t.shown {
		mark(p)
	}
	for _, f := range t.set.Files {
		mark(f.Path)
	}
	for _, f := range t.active {
		mark(f.Path)
	}
	return l
}

// adopt puts newly loaded files in force and marks them shown.
func (t *Tracker) adopt(files []File) []File {
	for _, f := range files {
		t.active = append(t.active, f)
		t.stamps[f.Path] = stamp{mod: f.mod, size: f.Size}
		t.shown[f.Path] = f.Hash()
	}
	return files
}

// Refresh runs at a turn boundary: it returns the files in force whose
// content differs from what the model holds (changed or new since), and
// the files the model holds that are gone, and records the model as
// holding the current content. Nothing is read unless a stat shows a
// change.
func (t *Tracker) Refresh() (changed []File, removed []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set.Changed() {
		t.set = Load(t.o)
	}
	kept := t.active[:0]
	for _, f := range t.active {
		if statStamp(f.Path) == t.stamps[f.Path] {
			kept = append(kept, f)
			continue
		}
		l := t.loader(true)
		delete(l.seen, f.Path)
		l.infos = slices.DeleteFunc(l.infos, func(fi os.FileInfo) bool {
			return sameAs(fi, f.Path)
		})
		l.loadAs(f.Path, f.Kind, f.Reason, f.IncludedBy, nil, f.Nested, f.Base)
		for _, g := range l.set.Files {
			t.stamps[g.Path] = stamp{mod: g.mod, size: g.Size}
			kept = append(kept, g)
		}
	}
	t.active = kept
	current := t.current()
	inForce := map[string]bool{}
	for _, f := range current {
		inForce[f.Path] = true
		if t.shown[f.Path] != f.Hash() {
			changed = append(changed, f)
			t.shown[f.Path] = f.Hash()
		}
	}
	for _, p := range slices.Sorted(maps.Keys(t.shown)) {
		if !inForce[p] {
			removed = append(removed, p)
			delete(t.shown, p)
		}
	}
	return changed, removed
}

// Current returns every file in force — those of the start, then the
// nested files and rules the session brought in — as last read. A
// compaction carries them through verbatim.
func (t *Tracker) Current() []File {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current()
}

func (t *Tracker) current() []File {
	out := slices.Clone(t.set.Files)
	have := map[string]bool{}
	for _, f := range out {
		have[f.Path] = true
	}
	for _, f := range t.active {
		if !have[f.Path] {
			out = append(out, f)
			have[f.Path] = true
		}
	}
	return out
}

// Matches reports whether a rule applies to the file at path, and which
// of its globs matched. Globs are relative to the rule's Base; one
// without a slash matches at any depth, as in .gitignore.
func (f File) Matches(path string) (string, bool) {
	rel, err := filepath.Rel(f.Base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	for _, g := range f.Globs {
		pat := strings.TrimPrefix(strings.TrimPrefix(g, "./"), "/")
		if strings.HasSuffix(pat, "/") {
			pat += "**"
		}
		if ok, _ := doublestar.Match(pat, rel); ok {
			return g, true
		}
		if !strings.Contains(strings.TrimSuffix(pat, "/**"), "/") {
			if ok, _ := doublestar.Match("**/"+pat, rel); ok {
				return g, true
			}
		}
	}
	return "", false
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// sameAs reports whether fi is the file at p.
func sameAs(fi os.FileInfo, p string) bool {
	g, err := os.Stat(p)
	return err == nil && os.SameFile(fi, g)
}
