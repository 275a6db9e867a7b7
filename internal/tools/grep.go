package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Limits of Grep.
const (
	// GrepMaxOutput caps the text Grep returns, in bytes; whole lines past
	// it are left out and counted.
	GrepMaxOutput = 30_000
	// GrepMaxColumns is the longest line shown; a longer one is replaced
	// by a note, as ripgrep's --max-columns does.
	GrepMaxColumns = 500
	// grepMaxRaw caps the raw search output kept in memory.
	grepMaxRaw = 16 << 20
)

// Grep searches file contents with a regular expression. It runs ripgrep
// when it is installed, with the flags Claude Code passes, and otherwise
// its own search, which gives the same output for the same files.
type Grep struct {
	// Ripgrep is the rg program to run; empty means "rg" on PATH.
	Ripgrep string
	// NoRipgrep makes Grep use its own search even where rg is installed.
	NoRipgrep bool
}

var grepSchema = schema(`{
	"type": "object",
	"properties": {
		"pattern": {"type": "string", "description": "Regular expression to search file contents for"},
		"path": {"type": "string", "description": "File or folder to search; the working directory when left out"},
		"glob": {"type": "string", "description": "Only search files whose names match this glob, such as \"*.go\" or \"*.{ts,tsx}\"; several may be separated by spaces, and a leading ! excludes"},
		"type": {"type": "string", "description": "Only search files of this type (ripgrep's names: go, py, js, ts, rust, java …); faster than glob for standard types"},
		"output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "files_with_matches (the default) lists matching files; content shows matching lines; count shows how many lines match in each file"},
		"-i": {"type": "boolean", "description": "Ignore case"},
		"-n": {"type": "boolean", "description": "Show line numbers (content mode only; on by default)"},
		"-A": {"type": "integer", "minimum": 0, "description": "Lines of context to show after each match (content mode only)"},
		"-B": {"type": "integer", "minimum": 0, "description": "Lines of context to show before each match (content mode only)"},
		"-C": {"type": "integer", "minimum": 0, "description": "Lines of context to show before and after each match (content mode only)"},
		"head_limit": {"type": "integer", "minimum": 1, "description": "Return only the first N lines or files of the result"},
		"multiline": {"type": "boolean", "description": "Let the pattern span lines, with . matching newlines too"}
	},
	"required": ["pattern"],
	"additionalProperties": false
}`)

// Spec describes Grep to the model.
func (Grep) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Grep",
		Description: `Searches file contents with a regular expression (ripgrep syntax), fast, in a codebase of any size.

- Always search with this tool rather than running grep or rg through Bash: it is faster and its output is shaped for you.
- The pattern is a full regular expression ("log.*Error", "func\\s+\\w+"). Escape literal braces and other special characters: "interface\\{\\}" finds "interface{}".
- Narrow the files with glob ("*.go", "**/*.{ts,tsx}") or type ("go", "py", "rust"), and path.
- output_mode: "files_with_matches" (default) lists the files that match, most recently modified first; "content" shows the matching lines (with line numbers, and -A/-B/-C context); "count" shows how many lines match per file.
- Patterns match within one line unless multiline is true.
- head_limit keeps only the first N lines or files of the result.
- Files ignored by .gitignore and version-control folders are skipped; binary files are not searched.
- For an open-ended search that takes many rounds, plan several searches and run independent ones in parallel.`,
		InputSchema: grepSchema,
	}
}

// ReadOnly reports true.
func (Grep) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (Grep) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports true.
func (Grep) ConcurrencySafe(json.RawMessage) bool { return true }

// Output modes of Grep.
const (
	modeFiles   = "files_with_matches"
	modeContent = "content"
	modeCount   = "count"
)

// grepDetail is Grep's toolUseResult.
type grepDetail struct {
	Mode         string   `json:"mode"`
	NumFiles     int      `json:"numFiles"`
	Filenames    []string `json:"filenames"`
	Content      *string  `json:"content,omitempty"`
	NumLines     *int     `json:"numLines,omitempty"`
	NumMatches   *int     `json:"numMatches,omitempty"`
	AppliedLimit *int     `json:"appliedLimit,omitempty"`
}

// grepQuery is one validated Grep call.
type grepQuery struct {
	pattern       string
	root          string
	rootIsFile    bool
	globs         []string
	fileType      string
	mode          string
	ignoreCase    bool
	lineNumbers   bool
	multiline     bool
	before, after int
	headLimit     int
}

// Run searches.
func (g Grep) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	q, res, ok := parseGrep(env, input)
	if !ok {
		return res, nil
	}
	fi, err := os.Stat(q.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failf("Path does not exist: %s (the working directory is %s)", q.root, env.Cwd()), nil
	case err != nil:
		return failf("Cannot search %s: %v", q.root, err), nil
	}
	q.rootIsFile = !fi.IsDir()

	var lines []string
	if rg := g.ripgrep(); rg != "" {
		lines, err = runRipgrep(ctx, rg, env.Cwd(), q)
	} else {
		lines, err = searchBuiltin(ctx, q)
	}
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return failf("%v", err), nil
	}
	return grepResult(q, lines), nil
}

// parseGrep validates the input.
func parseGrep(env *tool.Env, input json.RawMessage) (grepQuery, tool.Result, bool) {
	a := parseArgs("Grep", input, "pattern", "path", "glob", "type", "output_mode",
		"-i", "-n", "-A", "-B", "-C", "head_limit", "multiline")
	q := grepQuery{
		pattern:     a.str("pattern", true),
		root:        searchRoot(env, a.str("path", false)),
		globs:       splitGlobs(a.str("glob", false)),
		fileType:    a.str("type", false),
		mode:        a.str("output_mode", false),
		ignoreCase:  a.bool("-i"),
		multiline:   a.bool("multiline"),
		lineNumbers: true,
	}
	if _, given := a.raw("-n"); given {
		q.lineNumbers = a.bool("-n")
	}
	around, hasC := a.int("-C")
	q.before, _ = a.int("-B")
	q.after, _ = a.int("-A")
	if hasC {
		q.before, q.after = around, around
	}
	limit, hasLimit := a.int("head_limit")
	switch {
	case a.err != nil:
	case q.mode == "":
		q.mode = modeFiles
	case q.mode != modeFiles && q.mode != modeContent && q.mode != modeCount:
		a.err = fmt.Errorf(`parameter "output_mode" must be "content", "files_with_matches" or "count", got %q`, q.mode)
	}
	switch {
	case a.err != nil:
	case q.pattern == "":
		a.err = errors.New(`parameter "pattern" is empty`)
	case q.before < 0 || q.after < 0:
		a.err = errors.New(`context lines (-A, -B, -C) cannot be negative`)
	case hasLimit && limit < 1:
		a.err = errors.New(`parameter "head_limit" must be 1 or more`)
	}
	if a.err != nil {
		return q, a.invalid(), false
	}
	if hasLimit {
		q.headLimit = limit
	}
	if q.mode != modeContent {
		q.before, q.after = 0, 0
	}
	return q, tool.Result{}, true
}

// splitGlobs splits the glob parameter on spaces and, outside braces, on
// commas: "*.go, *.md" and "*.{ts,tsx}" both work.
func splitGlobs(s string) []string {
	var out []string
	for _, field := range strings.Fields(s) {
		if strings.Contains(field, "{") {
			out = append(out, field)
			continue
		}
		for g := range strings.SplitSeq(field, ",") {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}

// ripgrep returns the rg program to run, or "" for the built-in search.
func (g Grep) ripgrep() string {
	if g.NoRipgrep {
		return ""
	}
	name := g.Ripgrep
	if name == "" {
		name = "rg"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// ripgrepArgs returns rg's arguments for q: the flags Claude Code passes.
func ripgrepArgs(q grepQuery) []string {
	args := []string{"--hidden"}
	for _, d := range vcsDirs {
		args = append(args, "--glob", "!"+d)
	}
	args = append(args, "--max-columns", strconv.Itoa(GrepMaxColumns))
	if q.multiline {
		args = append(args, "-U", "--multiline-dotall")
	}
	if q.ignoreCase {
		args = append(args, "-i")
	}
	switch q.mode {
	case modeFiles:
		args = append(args, "-l")
	case modeCount:
		args = append(args, "-c")
	case modeContent:
		if q.lineNumbers {
			args = append(args, "-n")
		}
		if q.before > 0 && q.before == q.after {
			args = append(args, "-C", strconv.Itoa(q.before))
		} else {
			if q.before > 0 {
				args = append(args, "-B", strconv.Itoa(q.before))
			}
			if q.after > 0 {
				args = append(args, "-A", strconv.Itoa(q.after))
			}
		}
	}
	if strings.HasPrefix(q.pattern, "-") {
		args = append(args, "-e", q.pattern)
	} else {
		args = append(args, q.pattern)
	}
	if q.fileType != "" {
		args = append(args, "--type", q.fileType)
	}
	for _, g := range q.globs {
		args = append(args, "--glob", g)
	}
	return append(args, q.root)
}

// runRipgrep runs rg and returns its output lines.
func runRipgrep(ctx context.Context, rg, dir string, q grepQuery) ([]string, error) {
	cmd := exec.CommandContext(ctx, rg, ripgrepArgs(q)...)
	cmd.Dir = dir
	var stdout, stderr capBuffer
	stdout.max, stderr.max = grepMaxRaw, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return nil, nil // no matches
	case errors.As(err, &exit) && stdout.Len() > 0:
		// Some files could not be read; the matches found still count.
	default:
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("ripgrep: %s", msg)
		}
		return nil, fmt.Errorf("running ripgrep: %w", err)
	}
	out := strings.TrimRight(stdout.String(), "\n")
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

// capBuffer keeps the first max bytes written to it and drops the rest.
type capBuffer struct {
	bytes.Buffer
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// searchBuiltin searches like runRipgrep, without ripgrep: the same files
// (hidden ones included, version-control folders and .gitignore'd paths
// skipped, binary files left out) and the same output lines.
func searchBuiltin(ctx context.Context, q grepQuery) ([]string, error) {
	expr := q.pattern
	if q.multiline {
		expr = "(?ms)" + expr
	}
	if q.ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", q.pattern, err)
	}
	var typeGlobs []string
	if q.fileType != "" {
		var ok bool
		if typeGlobs, ok = fileTypes[q.fileType]; !ok {
			return nil, fmt.Errorf("unknown file type %q; use glob instead (for example \"*.ext\")", q.fileType)
		}
	}
	s := &searcher{q: q, re: re}
	err = walkFiles(ctx, q.root, walkOptions{}, func(p, rel string) error {
		if !q.rootIsFile && (!globsAllow(q.globs, rel) || (typeGlobs != nil && !matchesAny(typeGlobs, path.Base(rel)))) {
			return nil
		}
		s.file(p)
		if s.size > grepMaxRaw {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return s.out, nil
}

// searcher collects the output lines of the built-in search.
type searcher struct {
	q       grepQuery
	re      *regexp.Regexp
	out     []string
	size    int
	printed bool // content mode: some line was printed (for "--")
}

func (s *searcher) emit(line string) {
	s.out = append(s.out, line)
	s.size += len(line) + 1
}

// file searches one file.
func (s *searcher) file(name string) {
	data, err := os.ReadFile(name)
	if err != nil || bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return
	}
	text := string(data)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	matched := s.matchingLines(text, lines)
	if len(matched) == 0 {
		return
	}
	prefix := ""
	if !s.q.rootIsFile {
		prefix = name
	}
	switch s.q.mode {
	case modeFiles:
		s.emit(name)
	case modeCount:
		if prefix != "" {
			s.emit(prefix + ":" + strconv.Itoa(len(matched)))
		} else {
			s.emit(strconv.Itoa(len(matched)))
		}
	default:
		s.content(prefix, lines, matched)
	}
}

// matchingLines returns the sorted 0-based numbers of the lines that
// match; with multiline, every line a match spans.
func (s *searcher) matchingLines(text string, lines []string) []int {
	var out []int
	if !s.q.multiline {
		for i, l := range lines {
			if s.re.MatchString(l) {
				out = append(out, i)
			}
		}
		return out
	}
	starts := make([]int, len(lines)) // byte offset of each line
	for i, off := 1, 0; i < len(lines); i++ {
		off += len(lines[i-1]) + 1
		starts[i] = off
	}
	lineAt := func(off int) int {
		i, found := slices.BinarySearch(starts, off)
		if !found {
			i--
		}
		return max(i, 0)
	}
	seen := make(map[int]bool)
	for _, m := range s.re.FindAllStringIndex(text, -1) {
		first, last := lineAt(m[0]), lineAt(max(m[1]-1, m[0]))
		for i := first; i <= last && i < len(lines); i++ {
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return out
}

// content emits the matching lines of one file with their context, as
// ripgrep prints them: "name:n:text" for a match, "name-n-text" for
// context, "--" between groups that are not adjacent.
func (s *searcher) content(name string, lines []string, matched []int) {
	isMatch := make(map[int]bool, len(matched))
	for _, i := range matched {
		isMatch[i] = true
	}
	last := -1
	for _, m := range matched {
		from, to := max(m-s.q.before, last+1), min(m+s.q.after, len(lines)-1)
		if from > to {
			continue
		}
		if (s.q.before > 0 || s.q.after > 0) && s.printed && (last < 0 || from > last+1) {
			s.emit("--")
		}
		for i := from; i <= to; i++ {
			s.emit(s.formatLine(name, i, lines[i], isMatch[i]))
		}
		s.printed = true
		last = to
	}
}

func (s *searcher) formatLine(name string, i int, text string, match bool) string {
	sep := "-"
	if match {
		sep = ":"
	}
	var b strings.Builder
	if name != "" {
		b.WriteString(name + sep)
	}
	if s.q.lineNumbers {
		b.WriteString(strconv.Itoa(i+1) + sep)
	}
	switch {
	case len(text) <= GrepMaxColumns:
		b.WriteString(text)
	case match:
		fmt.Fprintf(&b, "[Omitted long line with %d matches]", max(len(s.re.FindAllStringIndex(text, -1)), 1))
	default:
		b.WriteString("[Omitted long context line]")
	}
	return b.String()
}

// globsAllow applies the glob parameter to a file's relative path as
// ripgrep's --glob does: a pattern without "/" matches the file name (or,
// when it excludes, any folder on the way), one with "/" the whole path;
// "!" excludes; with any including pattern the file must match one.
func globsAllow(globs []string, rel string) bool {
	include, included := false, false
	for _, g := range globs {
		neg := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(g, "!")
		var hit bool
		if strings.Contains(g, "/") {
			hit = doublestar.MatchUnvalidated(strings.TrimPrefix(g, "/"), rel)
		} else if neg {
			hit = slices.ContainsFunc(strings.Split(rel, "/"), func(elem string) bool {
				return doublestar.MatchUnvalidated(g, elem)
			})
		} else {
			hit = doublestar.MatchUnvalidated(g, path.Base(rel))
		}
		if neg && hit {
			return false
		}
		if !neg {
			include = true
			included = included || hit
		}
	}
	return !include || included
}

func matchesAny(globs []string, name string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return doublestar.MatchUnvalidated(g, name) })
}

// fileTypes are the built-in search's file types: the common ones of
// ripgrep's --type list.
var fileTypes = map[string][]string{
	"c":        {"*.[chH]", "*.[chH].in", "*.cats"},
	"cpp":      {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
	"cs":       {"*.cs"},
	"css":      {"*.css", "*.scss"},
	"dart":     {"*.dart"},
	"docker":   {"*Dockerfile*"},
	"elixir":   {"*.ex", "*.eex", "*.exs", "*.heex", "*.leex", "*.livemd"},
	"erlang":   {"*.erl", "*.hrl"},
	"go":       {"*.go"},
	"haskell":  {"*.hs", "*.lhs", "*.cpphs", "*.c2hs", "*.hsc"},
	"html":     {"*.htm", "*.html", "*.ejs"},
	"java":     {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":       {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"json":     {"*.json", "composer.lock", "*.sarif"},
	"kotlin":   {"*.kt", "*.kts"},
	"lua":      {"*.lua"},
	"make":     {"[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am", "[Mm]akefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.in", "*.mk", "*.mak"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"md":       {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"ocaml":    {"*.ml", "*.mli", "*.mll", "*.mly"},
	"perl":     {"*.perl", "*.pl", "*.PL", "*.plh", "*.plx", "*.pm", "*.t"},
	"php":      {"*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml"},
	"proto":    {"*.proto"},
	"protobuf": {"*.proto"},
	"py":       {"*.py", "*.pyi"},
	"python":   {"*.py", "*.pyi"},
	"r":        {"*.R", "*.r", "*.Rmd", "*.Rnw"},
	"rb":       {"*.rb", "Gemfile", "*.gemspec", "Rakefile", "config.ru", ".irbrc"},
	"ruby":     {"*.rb", "Gemfile", "*.gemspec", "Rakefile", "config.ru", ".irbrc"},
	"rust":     {"*.rs"},
	"scala":    {"*.scala", "*.sbt"},
	"sh":       {"*.bash", "*.bashrc", ".bash_*", ".bashrc", "*.sh", "*.zsh", ".zshrc", ".profile", ".zprofile"},
	"sql":      {"*.sql", "*.psql"},
	"swift":    {"*.swift"},
	"toml":     {"*.toml", "Cargo.lock"},
	"ts":       {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":      {"*.txt"},
	"xml":      {"*.xml", "*.xml.dist", "*.xsd", "*.xsl", "*.xslt", "*.svg", "*.rng", "*.sch", "*.xhtml"},
	"yaml":     {"*.yaml", "*.yml"},
	"zig":      {"*.zig"},
}

// grepResult shapes the raw output lines into what the model reads.
func grepResult(q grepQuery, lines []string) tool.Result {
	detail := grepDetail{Mode: q.mode, Filenames: []string{}}
	var text string
	limited := func(n int) int {
		if q.headLimit > 0 && n > q.headLimit {
			detail.AppliedLimit = &q.headLimit
			return q.headLimit
		}
		return n
	}
	switch q.mode {
	case modeFiles:
		files := make([]fileMTime, len(lines))
		for i, l := range lines {
			files[i] = fileMTime{l, mtimeOf(l)}
		}
		sortNewestFirst(files)
		for _, f := range files[:limited(len(files))] {
			detail.Filenames = append(detail.Filenames, f.path)
		}
		detail.NumFiles = len(detail.Filenames)
		if detail.NumFiles == 0 {
			text = "No files found"
		} else {
			text = fmt.Sprintf("Found %d %s\n%s", detail.NumFiles, plural(detail.NumFiles, "file", "files"), strings.Join(detail.Filenames, "\n"))
		}
	case modeContent:
		shown := lines[:limited(len(lines))]
		body, cut := capLines(shown, GrepMaxOutput)
		detail.Content, detail.NumLines = &body, new(len(shown))
		text = body
		if text == "" {
			text = "No matches found"
		}
		if cut > 0 {
			text += fmt.Sprintf("\n\n[%d more lines not shown: the output is limited to %d KB. Narrow the search with path, glob or type, or use head_limit]", cut, GrepMaxOutput>>10)
		}
	case modeCount:
		shown := lines[:limited(len(lines))]
		matches := 0
		for _, l := range shown {
			i := strings.LastIndexByte(l, ':')
			n, _ := strconv.Atoi(l[i+1:])
			matches += n
			if i >= 0 {
				detail.Filenames = append(detail.Filenames, l[:i])
			} else {
				detail.Filenames = append(detail.Filenames, q.root)
			}
		}
		body, cut := capLines(shown, GrepMaxOutput)
		detail.NumFiles, detail.NumMatches = len(shown), &matches
		detail.Content = &body
		if len(shown) == 0 {
			text = "No matches found"
		} else {
			text = body
			if cut > 0 {
				text += fmt.Sprintf("\n[%d more files not shown]", cut)
			}
			text += fmt.Sprintf("\n\nFound %d total %s across %d %s.", matches, plural(matches, "occurrence", "occurrences"), len(shown), plural(len(shown), "file", "files"))
		}
	}
	if detail.AppliedLimit != nil {
		text += fmt.Sprintf("\n\n[Showing the first %d results (head_limit); more were found]", q.headLimit)
	}
	r := tool.Text(text)
	r.Detail = detail
	return r
}

// capLines joins lines with "\n", stopping before max bytes; cut is how
// many lines were left out.
func capLines(lines []string, max int) (body string, cut int) {
	var b strings.Builder
	for i, l := range lines {
		if b.Len()+len(l)+1 > max && i > 0 {
			return b.String(), len(lines) - i
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String(), 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// TouchedPaths implements tool.PathToucher: the folder or file searched.
func (Grep) TouchedPaths(input json.RawMessage) []tool.PathUse { return searchUse(input) }

// Summary implements tool.Summarizer: the pattern, and where.
func (Grep) Summary(input json.RawMessage, rel func(string) string) string {
	return searchSummary(input, rel)
}

// Reobtainable implements tool.Reobtainable: the search can be run again.
func (Grep) Reobtainable() bool { return true }
