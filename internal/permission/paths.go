package permission

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// place is where a call happens: the project, the folders it may use, the
// working directory and the home folder, all absolute and cleaned.
type place struct {
	project string
	roots   []string // project and additional directories, as given and as resolved
	cwd     string
	home    string
	// resolved are the roots as given (even) and resolved (odd), so that
	// a path below one is resolved from there; real remembers what this
	// call resolved.
	resolved []string
	real     map[string]string
}

func newPlace(req Request) place {
	p := place{
		project: clean(req.ProjectDir, ""),
		home:    clean(req.Home, ""),
		real:    make(map[string]string),
	}
	p.cwd = clean(req.Cwd, p.project)
	if p.cwd == "" {
		p.cwd = p.project
	}
	p.resolved = req.resolvedRoots
	if p.resolved == nil {
		p.resolved = resolveRoots(p.project, req.AdditionalDirectories)
	}
	for i := 0; i < len(p.resolved); i += 2 {
		d, r := p.resolved[i], p.resolved[i+1]
		p.roots = append(p.roots, d)
		if r != d {
			p.roots = append(p.roots, r)
		}
	}
	return p
}

// resolveRoots returns the project and additional directories as given
// and as resolved, in pairs.
func resolveRoots(project string, dirs []string) []string {
	var out []string
	p := place{}
	for _, d := range append([]string{project}, dirs...) {
		if d = p.abs(d, project); d != "" {
			out = append(out, d, realPath(d))
		}
	}
	return out
}

// clean makes p absolute against base and cleans it; "" stays "".
func clean(p, base string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			return ""
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// abs resolves a path as a tool or the shell would: ~ is the home folder,
// a relative path is relative to dir. It returns "" when that cannot be
// known (~user, no home). A ".." is taken as the kernel takes it: after
// the symbolic links before it are followed (link/.. is the folder above
// where link leads, not the folder holding link).
func (p place) abs(path, dir string) string {
	a := p.absLogical(path, dir)
	if a == "" || !strings.Contains(path, "..") && !strings.Contains(dir, "..") {
		return a
	}
	raw := path
	if strings.HasPrefix(raw, "~") {
		raw = p.home + raw[1:]
	} else if !filepath.IsAbs(raw) {
		raw = dir + "/" + raw
	}
	if !hasDotDot(raw) {
		return a
	}
	cur := "/"
	for _, part := range strings.Split(raw, "/") {
		switch part {
		case "", ".":
		case "..":
			cur = filepath.Dir(p.realPath(cur))
		default:
			cur = filepath.Join(cur, part)
		}
	}
	return cur
}

func hasDotDot(path string) bool {
	for _, part := range strings.Split(path, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// absLogical resolves a path as abs does, but takes ".." as the shell's
// cd does: by dropping the part before it.
func (p place) absLogical(path, dir string) string {
	switch {
	case path == "":
		return ""
	case path == "~":
		return p.home
	case strings.HasPrefix(path, "~/"):
		if p.home == "" {
			return ""
		}
		return filepath.Join(p.home, path[2:])
	case strings.HasPrefix(path, "~"):
		return ""
	}
	return clean(path, dir)
}

// forms returns the path as written and, when symbolic links lead
// elsewhere, as resolved: a rule or a folder must hold both to allow,
// either to deny.
func (p place) forms(path string) []string {
	if r := p.realPath(path); r != path {
		return []string{path, r}
	}
	return []string{path}
}

// realPath resolves the symbolic links of the longest existing prefix of
// a clean absolute path. Below a root, only the part under the root is
// looked at: the root's own resolution is known.
func (p place) realPath(path string) string {
	if r, ok := p.real[path]; ok {
		return r
	}
	r := ""
	for i := 0; i+1 < len(p.resolved) && r == ""; i += 2 {
		if rel, ok := below(path, p.resolved[i]); ok {
			r = resolveUnder(p.resolved[i+1], rel)
		}
	}
	if r == "" {
		r = realPath(path)
	}
	if p.real != nil {
		p.real[path] = r
	}
	return r
}

// below returns path relative to dir when it is inside it.
func below(path, dir string) (string, bool) {
	switch {
	case path == dir:
		return "", true
	case dir == "/":
		return path[1:], strings.HasPrefix(path, "/")
	case strings.HasPrefix(path, dir) && path[len(dir)] == filepath.Separator:
		return path[len(dir)+1:], true
	}
	return "", false
}

// resolveUnder resolves rel (clean, relative) under base, which has no
// symbolic links: an lstat per part until one is missing (the rest is
// kept as written) or is a link (then all of it is resolved the slow way).
func resolveUnder(base, rel string) string {
	cur := base
	for rel != "" {
		part, rest, _ := strings.Cut(rel, string(filepath.Separator))
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case err != nil:
			return filepath.Join(cur, rel)
		case fi.Mode()&os.ModeSymlink != 0:
			return realPath(filepath.Join(next, rest))
		}
		cur, rel = next, rest
	}
	return cur
}

// realPath resolves the symbolic links of the longest existing prefix.
func realPath(path string) string {
	rest := ""
	for dir := path; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return path
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// inside reports whether path is in the project or an additional
// directory, through symbolic links too.
func (p place) inside(path string) bool {
	if path == "" {
		return false
	}
	for _, f := range p.forms(path) {
		if !p.inRoots(f) {
			return false
		}
	}
	return true
}

func (p place) inRoots(path string) bool {
	for _, r := range p.roots {
		if within(path, r) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// matchPath reports whether a Read or Edit rule's specifier matches an
// absolute path. Claude Code's forms, with gitignore-style globs:
//
//	//abs/path   from the file-system root
//	~/path       from the home folder
//	/path        from the project of the settings file
//	./path, path from the working directory; a pattern without a slash
//	             (*.env) matches at any depth below it
//
// A pattern matching a folder matches everything in it.
func (p place) matchPath(r Rule, path string) bool {
	base, pat := p.ruleBase(r)
	if base == "" || path == "" {
		return false
	}
	if strings.HasSuffix(pat, "/") {
		pat += "**"
	}
	if pat == "" {
		pat = "**"
	}
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	for rel = filepath.ToSlash(rel); rel != "." && rel != ""; rel = parent(rel) {
		if ok, _ := doublestar.Match(pat, rel); ok {
			return true
		}
	}
	return pat == "**"
}

// ruleBase splits a path specifier into the folder it is relative to and
// the pattern below it.
func (p place) ruleBase(r Rule) (base, pat string) {
	spec := r.Specifier
	switch {
	case strings.HasPrefix(spec, "//"):
		return "/", strings.TrimPrefix(spec, "//")
	case spec == "~":
		return p.home, "**"
	case strings.HasPrefix(spec, "~/"):
		return p.home, spec[2:]
	case strings.HasPrefix(spec, "/"):
		root := r.Root
		if root == "" {
			root = p.project
		}
		return root, spec[1:]
	case strings.HasPrefix(spec, "./"):
		return p.cwd, spec[2:]
	}
	if !strings.Contains(strings.TrimSuffix(spec, "/"), "/") {
		return p.cwd, "**/" + spec // gitignore: no slash, any depth
	}
	return p.cwd, spec
}

func parent(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}

// exists reports whether something is at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
