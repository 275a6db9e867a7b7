// Package instructions finds the instruction files a session follows —
// CLAUDE.md, AGENTS.md and their kin — as Claude Code finds them (SPEC I1–I3):
// managed policy files, the user's own, the project's (walking up from the
// working directory to the repository root), and local ones, lowest
// priority first; the files they include with @path; rule files under
// .claude/rules/ whose paths: front matter limits them to matching files;
// and files in subfolders, loaded when the agent first works there.
//
// Load reads what applies at the start of a session. A Tracker keeps a
// session's view: what the model was shown, what a file read brings in,
// and which files changed between turns.
package instructions

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/frontmatter"
)

// Kind is where an instruction file comes from; it decides how the file
// is introduced to the model.
type Kind string

const (
	// Managed files are an organisation's policy (/etc/…).
	Managed Kind = "Managed"
	// User files are the user's own, for every project.
	User Kind = "User"
	// Project files are checked into the project.
	Project Kind = "Project"
	// Local files are the user's own for this project (CLAUDE.local.md).
	Local Kind = "Local"
)

// Size limits. A file is read up to MaxFileBytes (a bigger one is cut at
// a line boundary with a note saying so, and is never read whole); all
// files together are held to MaxTotalBytes; includes nest at most
// MaxDepth deep.
const (
	DefaultMaxFileBytes  = 64 << 10
	DefaultMaxTotalBytes = 200 << 10
	DefaultMaxDepth      = 5
)

// File is one instruction file that loads, or may load.
type File struct {
	Path string
	Kind Kind
	// Content is what the model is given: the text without its front
	// matter, cut to the size limit.
	Content string
	// Size is the file's size on disk; Truncated is set when Content
	// holds only its start.
	Size      int64
	Truncated bool
	// Reason says why the file loads, for `cairn memory explain`.
	Reason string
	// IncludedBy is the file whose @-reference brought this one in.
	IncludedBy string
	// Globs are a rule's paths: patterns, relative to Base; a file with
	// globs applies only once the agent works on a matching file.
	Globs []string
	Base  string
	// Nested is set for a file found below the working directory, loaded
	// when the agent first reads a file in its folder.
	Nested bool

	mod time.Time
}

// Conditional reports whether the file applies only to matching files.
func (f File) Conditional() bool { return len(f.Globs) > 0 }

// Hash identifies the content the model is given.
func (f File) Hash() string {
	sum := sha256.Sum256([]byte(f.Content))
	return hex.EncodeToString(sum[:8])
}

// Options say where to look.
type Options struct {
	// Cwd is the working directory.
	Cwd string
	// Home is the user's home folder (~, and ~/.claude/CLAUDE.md);
	// CairnHome is $CAIRN_HOME, whose CLAUDE.md and rules/ are the user's
	// too. Either may be empty.
	Home, CairnHome string
	// Managed are the policy files; nil is DefaultManaged. ManagedRules
	// are policy rule folders; nil is DefaultManagedRules.
	Managed, ManagedRules []string
	// Root is where the walk up from Cwd stops; "" is the repository root
	// (the nearest folder holding .git), else the file-system root.
	Root string
	// Limits; zero takes the defaults.
	MaxFileBytes, MaxTotalBytes, MaxDepth int
}

// DefaultManaged are the managed policy files: cairn's and Claude Code's.
func DefaultManaged() []string {
	out := []string{"/etc/cairn/CLAUDE.md"}
	switch runtime.GOOS {
	case "darwin":
		return append(out, "/Library/Application Support/ClaudeCode/CLAUDE.md")
	case "windows":
		return []string{`C:\ProgramData\ClaudeCode\CLAUDE.md`}
	}
	return append(out, "/etc/claude-code/CLAUDE.md")
}

// DefaultManagedRules are the managed rule folders.
func DefaultManagedRules() []string {
	out := []string{"/etc/cairn/rules"}
	switch runtime.GOOS {
	case "darwin":
		return append(out, "/Library/Application Support/ClaudeCode/.claude/rules")
	case "windows":
		return []string{`C:\ProgramData\ClaudeCode\.claude\rules`}
	}
	return append(out, "/etc/claude-code/.claude/rules")
}

func (o *Options) defaults() {
	if o.Managed == nil {
		o.Managed = DefaultManaged()
	}
	if o.ManagedRules == nil {
		o.ManagedRules = DefaultManagedRules()
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.Cwd != "" {
		o.Cwd = filepath.Clean(o.Cwd)
	}
	if o.Root == "" {
		o.Root = RepoRoot(o.Cwd)
	}
}

// RepoRoot returns the nearest folder at or above dir holding .git, or
// the file-system root when there is none.
func RepoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return d
		}
		d = up
	}
}

// Set is what loads for a working directory.
type Set struct {
	// Files load at the start, lowest priority first; a file's includes
	// follow it.
	Files []File
	// Conditional are rules that load once the agent works on a file
	// their globs match.
	Conditional []File
	// Skipped are files that exist but do not load, with why.
	Skipped []Skip
	// Warnings are problems worth telling the user: invalid front
	// matter, include cycles, missing include targets, files cut.
	Warnings []string

	stamps map[string]stamp // every path looked at: files, folders, absences
}

// Skip is a file that was found and left out.
type Skip struct {
	Path, Reason string
}

// stamp is what a path looked like when it was read; the zero stamp is
// "absent".
type stamp struct {
	mod  time.Time
	size int64
}

// Changed reports whether any file or folder the set was built from
// changed on disk since, or a file it looked for now exists: a stat of
// each, no reads.
func (s *Set) Changed() bool {
	for p, was := range s.stamps {
		if statStamp(p) != was {
			return true
		}
	}
	return false
}

func statStamp(p string) stamp {
	fi, err := os.Stat(p)
	if err != nil {
		return stamp{}
	}
	if fi.IsDir() {
		return stamp{mod: fi.ModTime(), size: -1}
	}
	return stamp{mod: fi.ModTime(), size: fi.Size()}
}

// Load finds the instruction files for o.Cwd. It never fails: a file it
// cannot read or parse is reported in Warnings and the rest loads.
func Load(o Options) *Set {
	o.defaults()
	l := newLoader(o)
	for _, p := range o.Managed {
		l.file(p, Managed, "managed policy file", nil)
	}
	for _, d := range o.ManagedRules {
		l.rules(d, Managed, o.Cwd, "managed rule")
	}
	for _, d := range l.userDirs() {
		l.file(filepath.Join(d.dir, "CLAUDE.md"), User, "the user's instructions in "+d.dir, nil)
		l.rules(filepath.Join(d.dir, "rules"), User, o.Cwd, "the user's rule")
	}
	for _, d := range walk(o.Root, o.Cwd) {
		l.folder(d, false, "")
	}
	return l.set
}

type userDir struct{ dir string }

// userDirs are ~/.claude and $CAIRN_HOME, each once.
func (l *loader) userDirs() []userDir {
	var out []userDir
	seen := map[string]bool{}
	for _, d := range []string{joinIf(l.o.Home, ".claude"), l.o.CairnHome} {
		if d == "" || seen[realPath(d)] {
			continue
		}
		seen[realPath(d)] = true
		out = append(out, userDir{d})
	}
	return out
}

func joinIf(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}

// projectNames are the instruction files of a project folder, in order.
var projectNames = []string{"CLAUDE.md", filepath.Join(".claude", "CLAUDE.md"), "AGENTS.md", "CAIRN.md"}

// ruleDirs are a project folder's rule folders.
var ruleDirs = []string{filepath.Join(".claude", "rules"), filepath.Join(".cairn", "rules")}

// folder loads the instruction files of one project folder: the shared
// ones, its rules, then the local file. trigger names the file whose read
// brought in a nested folder.
func (l *loader) folder(dir string, nested bool, trigger string) {
	why := func(what string) string {
		if nested {
			return fmt.Sprintf("%s in %s, a folder below the working directory: loaded when %s was read", what, dir, trigger)
		}
		if dir == l.o.Cwd {
			return what + " in the working directory"
		}
		return what + " in " + dir + ", above the working directory"
	}
	for _, name := range projectNames {
		l.fileNested(filepath.Join(dir, name), Project, why("project instructions ("+name+")"), nested)
	}
	for _, rd := range ruleDirs {
		l.rulesNested(filepath.Join(dir, rd), Project, dir, why("project rule"), nested)
	}
	l.fileNested(filepath.Join(dir, "CLAUDE.local.md"), Local, why("local instructions (CLAUDE.local.md)"), nested)
}

// walk returns the folders from root down to cwd; cwd alone when it is
// not below root.
func walk(root, cwd string) []string {
	if cwd == "" {
		return nil
	}
	var out []string
	for d := cwd; ; {
		out = append(out, d)
		if d == root {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			if root != d {
				out = out[:1] // root was not above cwd
			}
			break
		}
		d = up
	}
	slices.Reverse(out)
	return out
}

// loader reads files into a Set, following includes.
type loader struct {
	o     Options
	set   *Set
	seen  map[string]bool // paths loaded or being loaded
	infos []os.FileInfo   // of the files loaded, to know a file reached two ways
	total int
	// activate loads rules with globs as if they matched (a rule whose
	// file the agent now works on).
	activate bool
}

func newLoader(o Options) *loader {
	return &loader{o: o, set: &Set{stamps: map[string]stamp{}}, seen: map[string]bool{}}
}

func (l *loader) file(path string, kind Kind, reason string, stack []string) {
	l.load(path, kind, reason, "", stack, false)
}

func (l *loader) fileNested(path string, kind Kind, reason string, nested bool) {
	l.load(path, kind, reason, "", nil, nested)
}

func (l *loader) rules(dir string, kind Kind, base, reason string) {
	l.rulesNested(dir, kind, base, reason, false)
}

// rulesNested loads every .md file below a rules folder, in name order.
func (l *loader) rulesNested(dir string, kind Kind, base, reason string, nested bool) {
	st := statStamp(dir)
	l.set.stamps[dir] = st
	if st == (stamp{}) {
		return
	}
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder holds no rules
		}
		if d.IsDir() {
			if p != dir {
				l.set.stamps[p] = statStamp(p)
			}
			return nil
		}
		if strings.EqualFold(filepath.Ext(p), ".md") {
			paths = append(paths, p)
		}
		return nil
	})
	for _, p := range paths {
		l.loadRule(p, kind, base, reason+" ("+relTo(dir, p)+")", nested)
	}
}

func (l *loader) loadRule(path string, kind Kind, base, reason string, nested bool) {
	l.loadAs(path, kind, reason, "", nil, nested, base)
}

func (l *loader) load(path string, kind Kind, reason, parent string, stack []string, nested bool) {
	l.loadAs(path, kind, reason, parent, stack, nested, "")
}

// front is the front matter instruction files may carry.
type front struct {
	Paths any `yaml:"paths"`
}

// loadAs reads one file and, after it, the files it includes. base is the
// folder a rule's globs are relative to ("" for files that are not in a
// rules folder: their globs are relative to their own folder).
func (l *loader) loadAs(path string, kind Kind, reason, parent string, stack []string, nested bool, base string) {
	key := filepath.Clean(path)
	if l.seen[key] {
		if slices.Contains(stack, key) {
			chain := append(slices.Clone(stack), key)
			l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("include cycle %s: the include of %q in %q is skipped", strings.Join(chain, " → "), path, parent))
		}
		return
	}
	data, size, mod, fi, err := readCapped(path, l.o.MaxFileBytes)
	if err == nil || parent == "" {
		l.set.stamps[path] = stamp{mod: mod, size: size} // the zero stamp: absent
	}
	if err == nil && l.same(fi) {
		return // the same file, reached another way (a symbolic link)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && parent == "":
		return
	case errors.Is(err, fs.ErrNotExist):
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: the include %q names no file; it is ignored", parent, path))
		return
	case err != nil:
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: %v; the file is ignored", path, err))
		return
	case binary(data):
		l.set.Skipped = append(l.set.Skipped, Skip{path, "not a text file"})
		return
	}
	l.seen[key] = true
	l.infos = append(l.infos, fi)
	f := File{Path: path, Kind: kind, Size: size, Reason: reason, IncludedBy: parent, Nested: nested, mod: mod}
	var fm front
	body, err := frontmatter.Parse(data, &fm)
	if err != nil {
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: invalid front matter (%v); the file loads without it, for every file", path, err))
	}
	globs, gerr := globsOf(fm.Paths)
	if gerr != nil {
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: %v; the file loads for every file", path, gerr))
	}
	f.Globs = globs
	if len(globs) > 0 {
		f.Base = cmp.Or(base, filepath.Dir(path))
		if !l.activate {
			// A rule waits for a matching file; its includes load with it.
			f.Content = strings.TrimRight(string(body), "\n")
			if int64(len(data)) < size {
				f.Truncated = true
				f.Content = strings.TrimRight(cutText(f.Content, len(f.Content), size), "\n")
			}
			l.set.Conditional = append(l.set.Conditional, f)
			delete(l.seen, key)
			l.infos = l.infos[:len(l.infos)-1]
			return
		}
	}
	text := string(body)
	if int64(len(data)) < size {
		f.Truncated = true
		text = cutText(text, len(text), size)
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s is %s; only its first %s load", path, human(size), human(int64(l.o.MaxFileBytes))))
	}
	if left := l.o.MaxTotalBytes - l.total; len(text) > left {
		if left < 1024 {
			l.set.Skipped = append(l.set.Skipped, Skip{path, fmt.Sprintf("the instruction files before it already fill the %s limit", human(int64(l.o.MaxTotalBytes)))})
			l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s is left out: the instruction files before it already fill the %s limit", path, human(int64(l.o.MaxTotalBytes))))
			return
		}
		f.Truncated = true
		text = cutText(text, left, size)
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s is cut: all instruction files together are held to %s", path, human(int64(l.o.MaxTotalBytes))))
	}
	f.Content = strings.TrimRight(text, "\n")
	l.total += len(f.Content)
	l.set.Files = append(l.set.Files, f)
	stack = append(slices.Clone(stack), key)
	if len(stack) > l.o.MaxDepth {
		if refs := includes(string(body)); len(refs) > 0 {
			l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: its includes are not followed: includes nest at most %d deep", path, l.o.MaxDepth))
		}
		return
	}
	for _, tok := range includes(string(body)) {
		cands := resolve(tok, path, l.o.Home)
		target := ""
		for _, c := range cands {
			if _, err := os.Stat(c); err == nil {
				target = c
				break
			}
		}
		if target == "" {
			if len(cands) > 0 && looksLikeFile(tok) {
				l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: the include @%s names no file; it is ignored", path, tok))
			}
			continue
		}
		l.loadAs(target, kind, "included by "+path, path, stack, nested, "")
	}
}

// readCapped reads at most limit bytes of path and returns them with the
// file's size and modification time.
func readCapped(path string, limit int) ([]byte, int64, time.Time, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, time.Time{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, time.Time{}, nil, err
	}
	if fi.IsDir() {
		return nil, 0, time.Time{}, nil, fmt.Errorf("%w: is a folder", fs.ErrNotExist)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return nil, 0, time.Time{}, nil, err
	}
	return data, max(fi.Size(), int64(len(data))), fi.ModTime(), fi, nil
}

// same reports whether fi is a file already loaded.
func (l *loader) same(fi os.FileInfo) bool {
	for _, g := range l.infos {
		if os.SameFile(fi, g) {
			return true
		}
	}
	return false
}

// cutText keeps at most n bytes of text, ending at a line boundary, and
// says that the rest was left out.
func cutText(text string, n int, size int64) string {
	if n < len(text) {
		text = text[:n]
	}
	if i := strings.LastIndexByte(text, '\n'); i > 0 {
		text = text[:i+1]
	}
	return text + fmt.Sprintf("\n[cairn: this file is %s; only its start is loaded here. Read the file itself for the rest.]\n", human(size))
}

func binary(data []byte) bool {
	return slices.Contains(data[:min(len(data), 8000)], 0)
}

// globsOf reads a paths: value: a list of patterns, or one string of
// comma-separated patterns.
func globsOf(v any) ([]string, error) {
	var raw []string
	switch p := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = strings.Split(p, ",")
	case []any:
		for _, e := range p {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("paths: %v is not a pattern", e)
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("paths: must be a list of patterns, not %T", v)
	}
	var out []string
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" && s != "**" && s != "**/*" {
			out = append(out, s)
		} else if s != "" {
			return nil, nil // a pattern matching everything: not conditional
		}
	}
	return out, nil
}

// realPath resolves symbolic links when it can, so one file reached two
// ways loads once.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
