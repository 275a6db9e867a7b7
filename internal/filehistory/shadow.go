package filehistory

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ShadowOptions bound the shadow copy of a project; zero fields take the
// defaults.
type ShadowOptions struct {
	// MaxFileSize: larger files are watched but never copied, so a
	// command's change to one cannot be rewound.
	MaxFileSize int64
	// MaxFiles is how many files are watched; changes to others go unseen.
	MaxFiles int
	// MaxBytes is how much content the shadow copies in all.
	MaxBytes int64
	// Budget is how long one look at the tree may take; what does not fit
	// is left for the next look.
	Budget time.Duration
}

// Defaults of ShadowOptions.
const (
	DefaultMaxFileSize = 1 << 20
	DefaultMaxFiles    = 20_000
	DefaultMaxBytes    = 200 << 20
	DefaultBudget      = 200 * time.Millisecond
)

func (o ShadowOptions) withDefaults() ShadowOptions {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	return o
}

// Shadow keeps copies of a project's files so that what a shell command
// changes can be backed up after the fact. Before a command it looks at
// the tree (the files git would not ignore, outside version-control
// folders, not following symbolic links) and copies into a
// content-addressed store the files whose size, modification time, inode
// or mode changed since its last look; after the command it looks again
// and reports every file created, changed or deleted, with its content
// from before. Safe for concurrent use; the looks are serialised.
type Shadow struct {
	root  string
	store string
	skip  []string // folders never entered (the file history's own)
	opts  ShadowOptions
	now   func() time.Time
	warn  func(string)

	mu       sync.Mutex
	warned   map[string]bool
	files    map[string]*shadowFile // by slash-separated path from root
	watched  int                    // files with watched set
	complete bool                   // the last look saw the whole tree
	objects  map[string]bool
	bytes    int64 // content copied so far
	// marker is the file-system time (ns) when the last look before a
	// command ended: a file modified at or after it may change again
	// within the same clock tick without its stat showing it.
	marker int64
}

// shadowFile is what the shadow knows of one file.
type shadowFile struct {
	stat
	watched bool   // within MaxFiles
	big     bool   // over MaxFileSize: watched, never copied
	obj     string // the object holding its content; "" until copied
}

// stat is what tells that a file changed.
type stat struct {
	size, mtime int64
	ino         uint64
	mode        fs.FileMode
}

func statOf(fi fs.FileInfo) stat {
	return stat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi), mode: fi.Mode().Perm()}
}

type changeKind int

const (
	created changeKind = iota
	modified
	deleted
)

// shellChange is one file a command created, changed or deleted.
type shellChange struct {
	path string // absolute
	kind changeKind
	// obj is the stored content from before the command, and mode its
	// mode; obj is empty for a created file, and when no copy was made
	// (why says why).
	obj  string
	mode fs.FileMode
	why  string
}

// newShadow returns a shadow of root kept in store.
func newShadow(root, store string, skip []string, opts ShadowOptions, now func() time.Time, warn func(string)) *Shadow {
	return &Shadow{
		root: root, store: store, skip: skip, opts: opts.withDefaults(), now: now, warn: warn,
		files: make(map[string]*shadowFile), objects: make(map[string]bool), warned: make(map[string]bool),
	}
}

// warnOnce tells about a bound that was hit, once per kind. The caller
// holds s.mu.
func (s *Shadow) warnOnce(key, msg string) {
	if s.warned[key] {
		return
	}
	s.warned[key] = true
	if s.warn != nil {
		s.warn(msg)
	}
}

// Before looks at the tree before a command and copies what changed since
// the last look, within the budget.
func (s *Shadow) Before(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.store, 0o700); err != nil {
		return fmt.Errorf("shell change tracking: %w", err)
	}
	deadline := s.now().Add(s.opts.Budget)
	seen := make(map[string]bool, len(s.files))
	var pending []string
	complete, err := s.walk(ctx, deadline, func(rel string, fi fs.FileInfo) {
		seen[rel] = true
		st := statOf(fi)
		f := s.files[rel]
		switch {
		case f == nil:
			f = s.add(rel, st)
		case f.stat != st:
			f.stat, f.obj = st, ""
		}
		f.big = f.size > s.opts.MaxFileSize
		if f.watched && !f.big && f.obj == "" {
			pending = append(pending, rel)
		}
	})
	if err != nil {
		return err
	}
	if complete {
		for rel := range s.files {
			if !seen[rel] {
				s.drop(rel)
			}
		}
	}
	s.complete = complete
	for i, rel := range pending {
		if s.now().After(deadline) {
			s.warnOnce("shadow-copy", fmt.Sprintf("shell change tracking: copying the project's files takes longer than %v a command; %d files are left for the next commands, and a change a command makes to one of them before then cannot be rewound", s.opts.Budget, len(pending)-i))
			break
		}
		f := s.files[rel]
		if s.bytes+f.size > s.opts.MaxBytes {
			s.warnOnce("shadow-bytes", fmt.Sprintf("shell change tracking: the project holds more than %s of files; changes commands make to the files beyond that cannot be rewound", humanSize(s.opts.MaxBytes)))
			continue
		}
		if err := s.copy(rel, f); err != nil {
			return err
		}
	}
	marker := filepath.Join(s.store, ".marker")
	if err := os.WriteFile(marker, []byte{'\n'}, 0o600); err != nil {
		return fmt.Errorf("shell change tracking: %w", err)
	}
	if fi, err := os.Stat(marker); err == nil {
		s.marker = fi.ModTime().UnixNano()
	}
	return nil
}

// After looks at the tree after a command and returns what it created,
// changed and deleted, sorted by path.
func (s *Shadow) After(ctx context.Context) ([]shellChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := s.now().Add(s.opts.Budget)
	seen := make(map[string]bool, len(s.files))
	var out []shellChange
	complete, err := s.walk(ctx, deadline, func(rel string, fi fs.FileInfo) {
		seen[rel] = true
		st := statOf(fi)
		abs := s.abs(rel)
		f := s.files[rel]
		switch {
		case f == nil:
			if !s.complete {
				return // the look before did not get this far: new or not, nobody knows
			}
			if f = s.add(rel, st); f.watched {
				out = append(out, shellChange{path: abs, kind: created})
			}
			return
		case !f.watched:
			f.stat = st
			return
		case f.stat == st && (f.mtime < s.marker || f.obj == "" || s.holds(abs, f)):
			// Unchanged, or changed within the clock tick of the last look
			// (racily clean, as git calls it) and then compared by content.
			return
		}
		out = append(out, s.change(abs, f, modified))
		f.stat, f.obj = st, ""
		f.big = f.size > s.opts.MaxFileSize
	})
	if err != nil {
		return nil, err
	}
	for rel, f := range s.files {
		if seen[rel] {
			continue
		}
		abs := s.abs(rel)
		if !complete {
			if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
				continue // not reached this time
			}
		}
		if f.watched {
			out = append(out, s.change(abs, f, deleted))
		}
		s.drop(rel)
	}
	slices.SortFunc(out, func(a, b shellChange) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

func (s *Shadow) abs(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

func (s *Shadow) add(rel string, st stat) *shadowFile {
	f := &shadowFile{stat: st, watched: s.watched < s.opts.MaxFiles}
	f.big = f.size > s.opts.MaxFileSize
	if f.watched {
		s.watched++
	} else {
		s.warnOnce("shadow-files", fmt.Sprintf("shell change tracking: the project has more than %d files; changes commands make to the others cannot be rewound", s.opts.MaxFiles))
	}
	s.files[rel] = f
	return f
}

func (s *Shadow) drop(rel string) {
	if s.files[rel].watched {
		s.watched--
	}
	delete(s.files, rel)
}

// change describes a change to f, with its stored content when there is.
func (s *Shadow) change(abs string, f *shadowFile, kind changeKind) shellChange {
	c := shellChange{path: abs, kind: kind, mode: f.mode}
	switch {
	case f.big:
		c.why = "it is larger than " + humanSize(s.opts.MaxFileSize)
	case f.obj == "":
		c.why = "it had not been copied yet"
	default:
		c.obj = filepath.Join(s.store, f.obj)
	}
	return c
}

// copy stores the content of one file.
func (s *Shadow) copy(rel string, f *shadowFile) error {
	data, err := readSmall(s.abs(rel), s.opts.MaxFileSize)
	if err != nil {
		return nil // gone or unreadable since the walk; the next look sees it
	}
	if data == nil {
		f.big = true
		return nil
	}
	name := objectName(data, f.mode)
	if !s.objects[name] {
		err := writeAtomic(filepath.Join(s.store, name), f.mode|0o400, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
		if err != nil {
			return fmt.Errorf("shell change tracking: %w", err)
		}
		s.objects[name] = true
		s.bytes += int64(len(data))
	}
	f.obj = name
	return nil
}

// holds reports whether the file at abs still has f's stored content.
func (s *Shadow) holds(abs string, f *shadowFile) bool {
	data, err := readSmall(abs, s.opts.MaxFileSize)
	return err == nil && data != nil && objectName(data, f.mode) == f.obj
}

// objectName is the content's SHA-256 and the mode it is stored with.
func objectName(data []byte, mode fs.FileMode) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) + "-" + strconv.FormatUint(uint64(mode.Perm()), 8)
}

// readSmall reads a file of at most limit bytes; nil data when larger.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil
	}
	return data, nil
}

// humanSize writes a size limit for a person.
func humanSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// remove deletes the store.
func (s *Shadow) remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files, s.objects, s.bytes, s.watched, s.complete = make(map[string]*shadowFile), make(map[string]bool), 0, 0, false
	return os.RemoveAll(s.store)
}

// vcsDirs are version-control folders never entered.
var vcsDirs = []string{".git", ".svn", ".hg", ".bzr", ".jj", ".sl"}

// walk calls fn for each regular file under the root that git would not
// ignore (.gitignore files from the top of the work tree down, and
// .git/info/exclude), in lexical order. It reports whether it saw the
// whole tree: it stops at the deadline, saying so once.
func (s *Shadow) walk(ctx context.Context, deadline time.Time, fn func(rel string, fi fs.FileInfo)) (bool, error) {
	w := &treeWalk{s: s, ctx: ctx, deadline: deadline, fn: fn}
	var ps []gitignore.Pattern
	if top, ok := gitTop(s.root); ok {
		w.top = top
		ps = readIgnoreFile(filepath.Join(top, ".git", "info", "exclude"), nil)
		rel, _ := filepath.Rel(top, s.root)
		dir := top
		for _, elem := range splitPath(rel) {
			ps = append(ps, readIgnoreFile(filepath.Join(dir, ".gitignore"), w.domain(dir))...)
			dir = filepath.Join(dir, elem)
		}
	}
	err := w.visit(s.root, "", ps)
	switch {
	case err == errOutOfTime:
		s.warnOnce("shadow-time", fmt.Sprintf("shell change tracking: looking through the project takes longer than %v; changes commands make to the files beyond %s cannot be rewound", s.opts.Budget, w.last))
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

var errOutOfTime = errors.New("out of time")

type treeWalk struct {
	s        *Shadow
	ctx      context.Context
	deadline time.Time
	fn       func(rel string, fi fs.FileInfo)
	top      string // top of the git work tree; "" outside one
	n        int
	last     string
}

func (w *treeWalk) domain(dir string) []string {
	rel, err := filepath.Rel(w.top, dir)
	if err != nil {
		return nil
	}
	return splitPath(rel)
}

func (w *treeWalk) visit(dir, rel string, ps []gitignore.Pattern) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // an unreadable folder is not watched
	}
	if w.top != "" {
		if more := readIgnoreFile(filepath.Join(dir, ".gitignore"), w.domain(dir)); len(more) > 0 {
			ps = append(slices.Clip(ps), more...)
		}
	}
	var m gitignore.Matcher
	if len(ps) > 0 {
		m = gitignore.NewMatcher(ps)
	}
	var base []string
	if w.top != "" {
		base = w.domain(dir)
	}
	for _, e := range entries {
		name := e.Name()
		isDir := e.IsDir()
		if isDir && slices.Contains(vcsDirs, name) {
			continue
		}
		if m != nil && m.Match(append(slices.Clip(base), name), isDir) {
			continue
		}
		path := filepath.Join(dir, name)
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		switch {
		case isDir:
			if slices.Contains(w.s.skip, path) {
				continue
			}
			if err := w.visit(path, childRel, ps); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if w.n++; w.n%64 == 0 && w.s.now().After(w.deadline) {
				w.last = childRel
				return errOutOfTime
			}
			fi, err := e.Info()
			if err != nil {
				continue // gone since the listing
			}
			w.fn(childRel, fi)
		}
	}
	return nil
}

// gitTop returns the top of the git work tree holding dir.
func gitTop(dir string) (string, bool) {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

// readIgnoreFile parses a gitignore-format file whose patterns apply below
// domain; a missing file has none.
func readIgnoreFile(path string, domain []string) []gitignore.Pattern {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// splitPath splits a relative path into its elements ("." has none).
func splitPath(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}
