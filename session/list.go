package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/transcript"
)

// liteBuf is how much of each end of a transcript a listing reads: Claude
// Code's "lite read" of the first and last 64 KiB.
const liteBuf = 64 << 10

// maxPromptRunes is the length past which a prompt is cut and ends in "…".
const maxPromptRunes = 200

// Info describes one session as `cairn sessions list` shows it.
type Info struct {
	SessionID string `json:"sessionId"`
	// Project is the working directory recorded in the transcript, else the
	// name of the project folder it sits in.
	Project string `json:"project"`
	Path    string `json:"path"`
	// Created is the first timestamp in the transcript, or the file's
	// modification time when the first 64 KiB hold none.
	Created time.Time `json:"created"`
	// Modified is the file's modification time; lists are newest first by it.
	Modified time.Time `json:"modified"`
	// Messages counts the user and assistant lines of the chain.
	Messages int   `json:"messages"`
	Bytes    int64 `json:"bytes"`
	// FirstPrompt is the first prompt the user typed, on one line, cut to
	// 200 characters.
	FirstPrompt string `json:"firstPrompt"`
	// LastPrompt is the newest last-prompt record near the end of the file,
	// else the last typed prompt there.
	LastPrompt string `json:"lastPrompt"`
	// Title is the session's name given with /rename (the newest
	// custom-title record near the end of the file), "" when none.
	Title string `json:"title,omitempty"`
}

// ListOptions select the sessions List returns.
type ListOptions struct {
	// Cwd picks the project: the one whose working directory it is.
	Cwd string
	// All lists every project instead.
	All bool
	// Warn receives one message per transcript that could not be read; nil
	// drops them.
	Warn func(string)
}

// List returns the sessions of one project, or of all, newest first by file
// modification time then by creation time, as Claude Code orders them.
// Subagent transcripts (whose first lines are a sidechain) are left out,
// and so are empty ones (no user or assistant line).
//
// Listing reads only the first and last 64 KiB of each transcript. The
// message count of a bigger file comes from a cache under the home's
// cache/ folder, updated by reading only the bytes appended since it was
// last counted; the first listing of a big file reads it once, end to end.
// Cancelling ctx stops the listing and returns ctx.Err().
func List(ctx context.Context, home Home, opts ListOptions) ([]Info, error) {
	return newLister(home, opts.Warn).list(ctx, opts)
}

func (l *lister) list(ctx context.Context, opts ListOptions) ([]Info, error) {
	dirs, err := projectDirs(l.home, opts.Cwd, opts.All)
	if err != nil {
		return nil, err
	}
	files, err := transcriptsIn(dirs...)
	if err != nil {
		return nil, err
	}
	infos, err := l.describeAll(ctx, files)
	if err != nil {
		return nil, err
	}
	l.saveCache(dirs, opts.All)
	sortInfos(infos)
	return infos, nil
}

// Latest returns the session `cairn --continue` resumes: the one of cwd's
// project whose transcript was modified last, empty ones skipped. With no session there it
// returns an error wrapping ErrNoSessions that names the project folder.
func Latest(ctx context.Context, home Home, cwd string) (Info, error) {
	if cwd == "" {
		return Info{}, errors.New("no working directory to find the project by")
	}
	dir := home.ProjectDir(cwd)
	files, err := transcriptsIn(dir)
	if err != nil {
		return Info{}, err
	}
	sortFiles(files)
	l := newLister(home, nil)
	w := newListWorker()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return Info{}, err
		}
		d := l.describe(f, w)
		if d.err != nil || d.sidechain {
			continue
		}
		l.fresh[d.key] = d.entry
		if d.info.Messages == 0 { // nothing to continue
			continue
		}
		l.saveCache(nil, false)
		return d.info, nil
	}
	return Info{}, fmt.Errorf("%w: no transcript in the project folder %q for %s; start a session there with `cairn`, or see every project's with `cairn sessions list --all`", ErrNoSessions, dir, cwd)
}

// sessionFile is a transcript found on disk.
type sessionFile struct {
	path  string
	dir   string // its project folder
	size  int64
	mtime time.Time
}

func (f sessionFile) id() string { return strings.TrimSuffix(filepath.Base(f.path), ".jsonl") }

// projectDirs returns the project folder of cwd, or every project folder.
func projectDirs(home Home, cwd string, all bool) ([]string, error) {
	if !all {
		if cwd == "" {
			return nil, errors.New("no working directory to find the project by; use --all to cover every project")
		}
		return []string{home.ProjectDir(cwd)}, nil
	}
	ents, err := os.ReadDir(home.Projects())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the projects folder: %w", err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(home.Projects(), e.Name()))
		}
	}
	return dirs, nil
}

// transcriptsIn returns the regular *.jsonl files directly in dirs; a
// missing folder holds none.
func transcriptsIn(dirs ...string) ([]sessionFile, error) {
	var out []sessionFile
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read project folder: %w", err)
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			st, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, sessionFile{
				path: filepath.Join(dir, e.Name()), dir: dir,
				size: st.Size(), mtime: st.ModTime(),
			})
		}
	}
	return out, nil
}

// sortFiles orders transcripts newest first by modification time.
func sortFiles(fs []sessionFile) {
	slices.SortStableFunc(fs, func(a, b sessionFile) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
}

func sortInfos(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// readerAtCloser is what the lister reads transcripts through.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// lister describes transcripts, with the message-count cache of one home.
type lister struct {
	home  Home
	open  func(path string) (readerAtCloser, error)
	warn  func(string)
	cache countCache            // as loaded; read-only while workers run
	fresh map[string]countEntry // entries to store, by cache key
}

func newLister(home Home, warn func(string)) *lister {
	if warn == nil {
		warn = func(string) {}
	}
	return &lister{
		home:  home,
		open:  func(p string) (readerAtCloser, error) { return transcript.OpenFile(p) },
		warn:  warn,
		cache: loadCountCache(home.countCachePath()),
		fresh: make(map[string]countEntry),
	}
}

// listWorker holds one goroutine's reusable buffers.
type listWorker struct {
	lite    []byte // both ends of a transcript, plus one byte
	scratch []byte // for counting the middle
}

func newListWorker() *listWorker {
	return &listWorker{lite: make([]byte, 2*liteBuf+1), scratch: make([]byte, 64<<10)}
}

// described is the outcome for one transcript.
type described struct {
	info      Info
	key       string
	entry     countEntry
	sidechain bool
	err       error
}

// describeAll describes files in parallel, skipping sidechains and
// unreadable files (with a warning).
func (l *lister) describeAll(ctx context.Context, files []sessionFile) ([]Info, error) {
	out := make([]described, len(files))
	err := forEach(ctx, len(files), func() func(int) {
		w := newListWorker()
		return func(i int) { out[i] = l.describe(files[i], w) }
	})
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(files))
	for _, d := range out {
		switch {
		case d.err != nil:
			l.warn(d.err.Error())
		case !d.sidechain:
			l.fresh[d.key] = d.entry
			if d.info.Messages > 0 { // an empty session is nothing to list
				infos = append(infos, d.info)
			}
		}
	}
	return infos, nil
}

// forEach runs do(i) for i in [0, n) on a few goroutines; each goroutine
// gets its own do from newDo. It stops early when ctx is cancelled.
func forEach(ctx context.Context, n int, newDo func() func(int)) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(n, 2*runtime.GOMAXPROCS(0)) {
		do := newDo()
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// describe reads the two ends of one transcript and counts its messages.
func (l *lister) describe(f sessionFile, w *listWorker) described {
	r, err := l.open(f.path)
	if err != nil {
		return described{err: fmt.Errorf("skipped %s: %w", f.path, err)}
	}
	defer r.Close()
	d, err := l.describeFile(r, f, w)
	if err != nil {
		return described{err: fmt.Errorf("skipped %s: %w", f.path, err)}
	}
	return d
}

func (l *lister) describeFile(r io.ReaderAt, f sessionFile, w *listWorker) (described, error) {
	// Most of the time what listing needs sits in the first and last few
	// KiB; Claude Code's full 64 KiB are read only when it does not.
	lt, err := readLite(r, f.size, w.lite, firstRead)
	if err != nil {
		return described{}, err
	}
	full := func() error {
		if lt.n < liteBuf && int64(lt.n) < lt.size {
			lt, err = readLite(r, f.size, w.lite, liteBuf)
		}
		return err
	}
	h := parseHead(lt)
	if !h.complete() {
		if err := full(); err != nil {
			return described{}, err
		}
		h = parseHead(lt)
	}
	if h.sidechain {
		return described{sidechain: true}, nil
	}
	last, title, ok := parseTail(lt)
	if !ok {
		if err := full(); err != nil {
			return described{}, err
		}
		last, title, _ = parseTail(lt)
	}
	d := described{key: l.home.cacheKey(f.path), info: Info{
		SessionID:   f.id(),
		Project:     h.cwd,
		Path:        f.path,
		Created:     h.created.UTC(),
		Modified:    f.mtime.UTC(),
		Bytes:       lt.size,
		FirstPrompt: h.firstPrompt,
		LastPrompt:  last,
		Title:       title,
	}}
	if d.info.Project == "" {
		d.info.Project = filepath.Base(f.dir)
	}
	if h.created.IsZero() {
		d.info.Created = d.info.Modified
	}
	d.info.Messages, d.entry, err = l.count(r, d.key, f, &lt, full, w.scratch)
	return d, err
}

// firstRead is how much of each end describe reads first.
const firstRead = 8 << 10

// lite holds the two ends of a transcript.
type lite struct {
	size int64
	n    int    // how much of each end was asked for
	head []byte // the first n bytes; the whole file when it is small
	tail []byte // the last n bytes
	// headCut is set when head ends before the file does, so its last
	// line may be partial; tailCut when tail starts inside a line.
	headCut, tailCut bool
	// whole is the whole file when it fits in head and tail together.
	whole []byte
}

// readLite reads the first and last n bytes (at most liteBuf) of a file of
// the given size into buf (2*liteBuf+1 bytes). A file that shrank
// meanwhile is read as far as it goes.
func readLite(r io.ReaderAt, size int64, buf []byte, n int) (lite, error) {
	if size <= int64(2*n) {
		k, err := r.ReadAt(buf[:size], 0)
		if err != nil && err != io.EOF {
			return lite{}, err
		}
		b := buf[:k]
		lt := lite{size: int64(k), n: n, whole: b, head: b, tail: b}
		if len(b) > n {
			lt.head, lt.headCut = b[:n], true
			start := len(b) - n
			lt.tail, lt.tailCut = b[start:], b[start-1] != '\n'
		}
		return lt, nil
	}
	k, err := r.ReadAt(buf[:n], 0)
	if err != nil && err != io.EOF {
		return lite{}, err
	}
	lt := lite{size: size, n: n, head: buf[:k], headCut: true}
	// One byte more than the tail tells whether it starts a line.
	t := buf[liteBuf : liteBuf+n+1]
	m, err := r.ReadAt(t, size-int64(n)-1)
	if err != nil && err != io.EOF {
		return lite{}, err
	}
	if m > 0 {
		lt.tail, lt.tailCut = t[1:m], t[0] != '\n'
	}
	return lt, nil
}

// lines calls fn for each line of b in order (backward when back is set)
// until fn returns false. A first segment that continues a line before b
// (skipFirst) or a last one that goes on after it (cutLast) is left out.
func lines(b []byte, skipFirst, cutLast, back bool, fn func([]byte) bool) {
	if skipFirst {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		b = b[i+1:]
	}
	if cutLast {
		j := bytes.LastIndexByte(b, '\n')
		if j < 0 {
			return
		}
		b = b[:j+1]
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	for len(b) > 0 {
		var line []byte
		if back {
			i := bytes.LastIndexByte(b, '\n')
			line, b = b[i+1:], b[:max(i, 0)]
		} else {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				line, b = b, nil
			} else {
				line, b = b[:i], b[i+1:]
			}
		}
		if !fn(line) {
			return
		}
	}
}

// liteLine is the part of a transcript line listing looks at.
type liteLine struct {
	Type             string `json:"type"`
	IsMeta           bool   `json:"isMeta"`
	IsCompactSummary bool   `json:"isCompactSummary"`
	IsSidechain      bool   `json:"isSidechain"`
	Timestamp        string `json:"timestamp"`
	CWD              string `json:"cwd"`
	LastPrompt       string `json:"lastPrompt"`
	CustomTitle      string `json:"customTitle"`
	Message          *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// Byte patterns that tell, before decoding, whether a line can matter.
// Inside JSON strings a quote is escaped, so these only match real keys.
var (
	patTimestamp  = []byte(`"timestamp"`)
	patCwd        = []byte(`"cwd"`)
	patUser       = []byte(`"type":"user"`)
	patToolResult = []byte(`"type":"tool_result"`)
	patLastPrompt = []byte(`"lastPrompt"`)
	patTitle      = []byte(`"customTitle"`)
	patSidechain  = []byte(`"isSidechain"`)
)

type headInfo struct {
	cwd         string
	created     time.Time
	firstPrompt string
	sideKnown   bool // the first line with "isSidechain" was read
	sidechain   bool
}

func (h headInfo) complete() bool {
	return h.cwd != "" && !h.created.IsZero() && h.firstPrompt != "" && h.sideKnown
}

// parseHead finds the first timestamp, working directory and typed prompt
// in the head, and whether the transcript is a subagent's sidechain,
// decoding only lines that may hold one of them.
func parseHead(lt lite) headInfo {
	var h headInfo
	lines(lt.head, false, lt.headCut, false, func(line []byte) bool {
		needTime := h.created.IsZero() && bytes.Contains(line, patTimestamp)
		needCwd := h.cwd == "" && bytes.Contains(line, patCwd)
		needPrompt := h.firstPrompt == "" && isPromptCandidate(line)
		needSide := !h.sideKnown && bytes.Contains(line, patSidechain)
		if !needTime && !needCwd && !needPrompt && !needSide {
			return true
		}
		var ll liteLine
		if json.Unmarshal(line, &ll) != nil {
			return true
		}
		if needTime {
			h.created = parseTime(ll.Timestamp)
		}
		if needCwd {
			h.cwd = ll.CWD
		}
		if needPrompt {
			h.firstPrompt, _ = promptOf(&ll)
		}
		if needSide {
			h.sideKnown, h.sidechain = true, ll.IsSidechain
		}
		return !h.complete() && !h.sidechain
	})
	return h
}

// parseTail returns the newest non-empty last-prompt record in the tail,
// else the last typed prompt there, and the newest custom title there; ok
// reports a last-prompt record found.
func parseTail(lt lite) (prompt, title string, ok bool) {
	var fallback string
	lines(lt.tail, lt.tailCut, false, true, func(line []byte) bool {
		if title == "" && bytes.Contains(line, patTitle) {
			var ll liteLine
			if json.Unmarshal(line, &ll) == nil && ll.Type == "custom-title" {
				title = oneLine(ll.CustomTitle)
			}
		}
		if ok {
			return title == ""
		}
		if bytes.Contains(line, patLastPrompt) {
			var ll liteLine
			if json.Unmarshal(line, &ll) == nil && ll.Type == "last-prompt" && ll.LastPrompt != "" {
				prompt, ok = oneLine(ll.LastPrompt), true
				return title == "" // on, for a title further back
			}
		}
		if fallback == "" && isPromptCandidate(line) {
			var ll liteLine
			if json.Unmarshal(line, &ll) == nil {
				fallback, _ = promptOf(&ll)
			}
		}
		return true
	})
	if ok {
		return prompt, title, true
	}
	return fallback, title, false
}

func isPromptCandidate(line []byte) bool {
	return bytes.Contains(line, patUser) && !bytes.Contains(line, patToolResult)
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// promptOf returns the text a person typed in a user line (see
// TypedPrompt).
func promptOf(ll *liteLine) (string, bool) {
	if ll.Type != "user" || ll.Message == nil {
		return "", false
	}
	texts, toolResult := userTexts(ll.Message.Content)
	return TypedPrompt(ll.IsMeta, ll.IsCompactSummary, toolResult, texts)
}

// TypedPrompt returns the text a person typed in a user line, given the
// line's flags and the texts of its content in order: nothing for a tool
// result, a meta line or a compaction summary; else the first text that
// is not markup such as command tags or reminders, nor an interruption
// notice, put on one line and cut to 200 characters. It is the one rule
// for every listing of sessions (the local one and the team store's).
func TypedPrompt(meta, compactSummary, toolResult bool, texts []string) (string, bool) {
	if meta || compactSummary || toolResult {
		return "", false
	}
	for _, t := range texts {
		if p := shortPrompt(t); p != "" && !isMarkup(p) {
			return p, true
		}
	}
	return "", false
}

// userTexts returns the texts of a user message's content in order, and
// whether it holds a tool result.
func userTexts(content json.RawMessage) (texts []string, toolResult bool) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}, false
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil, false
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			return nil, true
		case "text":
			texts = append(texts, b.Text)
		}
	}
	return texts, false
}

// isMarkup reports text that starts with a tag such as <command-name> or
// <system-reminder>, or is Claude Code's "[Request interrupted by user…]".
func isMarkup(s string) bool {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if rest, ok := strings.CutPrefix(s, "[Request interrupted by user"); ok {
		return strings.Contains(rest, "]")
	}
	if len(s) < 3 || s[0] != '<' || s[1] < 'a' || s[1] > 'z' {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '>' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			return true
		case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return false
}

// oneLine turns newlines into spaces and trims.
func oneLine(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
}

// shortPrompt is oneLine cut to maxPromptRunes characters, with "…" when
// something was cut.
func shortPrompt(s string) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= maxPromptRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == maxPromptRunes {
			return strings.TrimSpace(s[:i]) + "…"
		}
		n++
	}
	return s
}

// count returns the number of chain messages of a transcript and the cache
// entry to keep for it. Unchanged files take their count from the cache; a
// small file is counted from memory (full reads both whole ends); a bigger
// one from its cache entry, reading only what was appended since.
func (l *lister) count(r io.ReaderAt, key string, f sessionFile, lt *lite, full func() error, scratch []byte) (int, countEntry, error) {
	headLen := min(len(lt.head), headSumLen)
	headSum := crc32.ChecksumIEEE(lt.head[:headLen])
	old, ok := l.cache.Entries[key]
	if ok && (old.HeadLen > len(lt.head) || crc32.ChecksumIEEE(lt.head[:old.HeadLen]) != old.HeadSum) {
		ok = false // the start of the file changed: a different transcript
	}
	if ok && old.Size == lt.size && old.MTime == f.mtime.UnixNano() {
		return old.Count + old.Torn, old, nil
	}
	var c chainCounter
	if ok && lt.size >= old.Size && old.Offset <= lt.size {
		c = chainCounter{n: old.Count, pos: old.Offset, lastNL: old.Offset}
	}
	if lt.size <= 2*liteBuf {
		if err := full(); err != nil {
			return 0, countEntry{}, err
		}
	}
	if lt.whole != nil {
		c.feed(lt.whole[min(c.pos, int64(len(lt.whole))):])
	} else if err := c.feedFrom(r, lt.size, scratch); err != nil {
		return 0, countEntry{}, err
	}
	e := countEntry{
		Size: lt.size, MTime: f.mtime.UnixNano(),
		Count: c.n, Torn: c.pending(), Offset: c.lastNL,
		HeadLen: headLen, HeadSum: headSum,
	}
	return e.Count + e.Torn, e, nil
}

// headSumLen is how much of the start of a file identifies it in the cache.
const headSumLen = 4 << 10

// countEntry is what the cache keeps for one transcript.
type countEntry struct {
	Size  int64
	MTime int64 // Unix nanoseconds
	// Count is the number of chain messages in the lines before Offset,
	// which is just past the last newline counted.
	Count  int
	Offset int64
	// Torn is 1 when the bytes after Offset hold one more complete message
	// that lacks its newline.
	Torn int
	// HeadSum is the CRC-32 of the first HeadLen bytes: when they change,
	// the file is a different transcript and is counted again.
	HeadLen int
	HeadSum uint32
}

// countCache is the message-count cache. On disk it is a text file, one
// transcript a line — size, mtime, count, offset, torn, headLen, headSum
// and the key, separated by tabs — after a header line naming the format;
// it loads in well under a millisecond for thousands of sessions.
type countCache struct {
	Entries map[string]countEntry
}

const countCacheHeader = "# cairn session message counts v1"

func (h Home) countCachePath() string {
	return filepath.Join(h.Dir, "cache", "cairn-session-counts.tsv")
}

// cacheKey names a transcript in the cache by its path under the home, so
// the cache survives the home being moved.
func (h Home) cacheKey(path string) string {
	if rel, err := filepath.Rel(h.Dir, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// loadCountCache reads the cache; anything unreadable counts as empty, as
// the cache only saves work.
func loadCountCache(path string) countCache {
	c := countCache{Entries: make(map[string]countEntry)}
	b, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	header, rest, _ := bytes.Cut(b, []byte("\n"))
	if string(header) != countCacheHeader {
		return c
	}
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if k, e, ok := parseCountLine(line); ok {
			c.Entries[k] = e
		}
	}
	return c
}

func parseCountLine(line []byte) (string, countEntry, bool) {
	var nums [7]int64
	for i := range nums {
		field, more, ok := bytes.Cut(line, []byte("\t"))
		if !ok {
			return "", countEntry{}, false
		}
		n, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return "", countEntry{}, false
		}
		nums[i], line = n, more
	}
	if len(line) == 0 {
		return "", countEntry{}, false
	}
	return string(line), countEntry{
		Size: nums[0], MTime: nums[1], Count: int(nums[2]), Offset: nums[3],
		Torn: int(nums[4]), HeadLen: int(nums[5]), HeadSum: uint32(nums[6]),
	}, true
}

// encode renders the cache file, keys in order.
func (c countCache) encode() []byte {
	keys := make([]string, 0, len(c.Entries))
	for k := range c.Entries {
		if !strings.ContainsAny(k, "\n") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b := append(make([]byte, 0, 64*len(keys)+64), countCacheHeader+"\n"...)
	for _, k := range keys {
		e := c.Entries[k]
		for _, n := range []int64{e.Size, e.MTime, int64(e.Count), e.Offset, int64(e.Torn), int64(e.HeadLen), int64(e.HeadSum)} {
			b = strconv.AppendInt(b, n, 10)
			b = append(b, '\t')
		}
		b = append(append(b, k...), '\n')
	}
	return b
}

// saveCache merges the entries just computed into the cache and writes it
// if anything changed. Entries under dirs (every entry, with all) that were
// not seen are dropped. A failure to write is only a warning.
func (l *lister) saveCache(dirs []string, all bool) {
	changed := false
	var prefixes []string
	for _, d := range dirs {
		prefixes = append(prefixes, l.home.cacheKey(d)+"/")
	}
	for k := range l.cache.Entries {
		if _, seen := l.fresh[k]; seen {
			continue
		}
		if all || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			delete(l.cache.Entries, k)
			changed = true
		}
	}
	for k, e := range l.fresh {
		if old, ok := l.cache.Entries[k]; !ok || old != e {
			l.cache.Entries[k] = e
			changed = true
		}
	}
	if !changed {
		return
	}
	err := os.MkdirAll(filepath.Dir(l.home.countCachePath()), 0o700)
	if err == nil {
		err = renameio.WriteFile(l.home.countCachePath(), l.cache.encode(), 0o600)
	}
	if err != nil {
		l.warn(fmt.Sprintf("could not save the session list cache (%v); the next listing will count again", err))
	}
}

// chainCounter counts the chain messages — lines whose top-level "type" is
// "user" or "assistant" and whose top-level "uuid" is a non-empty string —
// in a stream of transcript bytes. It follows the JSON structure only far
// enough to read those two fields, skipping every other value however long
// it is, so it needs no buffer for a line and decodes nothing.
type chainCounter struct {
	pos    int64 // offset of the next byte fed
	n      int   // messages on lines ended by a newline
	lastNL int64 // offset just past the last newline fed

	// The state of the current line.
	depth     int
	started   bool // a top-level value has begun
	obj       bool // it is an object
	closed    bool // and it has ended
	bad       bool // the line is not one JSON object
	inStr     bool
	esc       bool // the next string byte is escaped
	expectKey bool // the next string at depth 1 is a key
	str       strKind
	field     field // the top-level key whose value comes next
	raw       [64]byte
	rawLen    int
	rawOver   bool
	chat      bool // "type" is "user" or "assistant"
	hasUUID   bool
}

type strKind uint8

const (
	strSkip strKind = iota
	strKey
	strValue
)

type field uint8

const (
	fieldNone field = iota
	fieldType
	fieldUUID
)

// feedFrom feeds the bytes of r from c.pos to size, through buf.
func (c *chainCounter) feedFrom(r io.ReaderAt, size int64, buf []byte) error {
	for c.pos < size {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-c.pos)], c.pos)
		c.feed(buf[:n])
		if err == io.EOF || n == 0 {
			return nil // the file shrank while being read
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// feed counts p, which continues the bytes fed so far.
func (c *chainCounter) feed(p []byte) {
	base := c.pos
	c.pos += int64(len(p))
	for i := 0; i < len(p); {
		if c.inStr {
			if c.str == strSkip {
				i = c.skipString(p, i)
			} else {
				i = c.captureString(p, i)
			}
			continue
		}
		b := p[i]
		i++
		switch b {
		case '\n':
			c.endLine(base + int64(i))
		case ' ', '\t', '\r':
		case '"':
			c.startString()
		case '{', '[':
			if c.depth == 0 {
				c.bad = c.bad || c.started
				c.started, c.obj, c.expectKey = true, b == '{', b == '{'
			} else if c.depth == 1 {
				c.field = fieldNone
			}
			c.depth++
		case '}', ']':
			if c.depth == 0 {
				c.bad = true
				break
			}
			c.depth--
			c.closed = c.depth == 0
		case ',':
			if c.depth == 1 {
				c.expectKey, c.field = true, fieldNone
			}
		case ':':
		default: // numbers, true, false, null
			if c.depth == 0 {
				c.bad, c.started = true, true
			} else if c.depth == 1 {
				c.field = fieldNone
			}
		}
	}
}

func (c *chainCounter) startString() {
	c.inStr = true
	c.str = strSkip
	switch {
	case c.depth == 0:
		c.bad, c.started = true, true
	case c.depth == 1 && c.obj && c.expectKey:
		c.str = strKey
	case c.depth == 1 && c.obj && c.field != fieldNone:
		c.str = strValue
	}
	c.rawLen, c.rawOver = 0, false
}

// skipString passes over string bytes from p[i] without looking at each
// one: it jumps from quote to quote and only inspects backslashes before
// them. It returns where the string ends (past its closing quote), len(p)
// when it goes on, or the index of a raw newline, which ends the line even
// inside a string (the line was cut short).
func (c *chainCounter) skipString(p []byte, i int) int {
	if c.esc {
		c.esc = false
		if p[i] == '\n' {
			c.inStr = false
			return i
		}
		i++
	}
	for i < len(p) {
		seg := p[i:]
		q := bytes.IndexByte(seg, '"')
		if q >= 0 {
			seg = seg[:q]
		}
		if nl := bytes.IndexByte(seg, '\n'); nl >= 0 {
			c.inStr = false
			return i + nl
		}
		// Walk the escapes before the quote; j ends past the last escaped
		// byte, which is the quote itself when j == len(seg)+1.
		j := 0
		for j < len(seg) {
			k := bytes.IndexByte(seg[j:], '\\')
			if k < 0 {
				break
			}
			j += k + 2
		}
		switch {
		case j <= len(seg) && q >= 0:
			c.inStr = false
			return i + q + 1
		case j <= len(seg):
			return len(p)
		case q < 0:
			c.esc = true // the escaped byte is in the next chunk
			return len(p)
		}
		i += q + 1 // an escaped quote: keep going
	}
	return i
}

// captureString reads a key or a value of interest byte by byte.
func (c *chainCounter) captureString(p []byte, i int) int {
	// Fast path: a short string with no escapes, all in p.
	if !c.esc {
		for j := i; j < len(p) && j-i <= len(c.raw)-c.rawLen; j++ {
			switch p[j] {
			case '"':
				c.rawLen += copy(c.raw[c.rawLen:], p[i:j])
				c.inStr = false
				c.endCapture()
				return j + 1
			case '\\', '\n':
				j = len(p) // take the slow path
			}
		}
	}
	for ; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\n':
			c.inStr, c.esc = false, false
			return i
		case c.esc:
			c.esc = false
		case b == '\\':
			c.esc = true
		case b == '"':
			c.inStr = false
			c.endCapture()
			return i + 1
		}
		if c.rawLen < len(c.raw) {
			c.raw[c.rawLen] = b
			c.rawLen++
		} else {
			c.rawOver = true
		}
	}
	return i
}

func (c *chainCounter) endCapture() {
	s := c.raw[:c.rawLen]
	if c.str == strKey {
		c.expectKey, c.field = false, fieldNone
		if c.rawOver || (len(s) != 4 && bytes.IndexByte(s, '\\') < 0) {
			return // most keys: not "type" nor "uuid"
		}
		switch {
		case jsonStringIs(s, "type"):
			c.field, c.chat = fieldType, false
		case jsonStringIs(s, "uuid"):
			c.field, c.hasUUID = fieldUUID, false
		}
		return
	}
	switch c.field {
	case fieldType:
		c.chat = !c.rawOver && (jsonStringIs(s, "user") || jsonStringIs(s, "assistant"))
	case fieldUUID:
		c.hasUUID = c.rawLen > 0
	}
	c.field = fieldNone
}

// jsonStringIs reports whether the body of a JSON string, as written
// between its quotes, decodes to want.
func jsonStringIs(body []byte, want string) bool {
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body) == want
	}
	var s string
	quoted := make([]byte, 0, len(body)+2)
	quoted = append(append(append(quoted, '"'), body...), '"')
	return json.Unmarshal(quoted, &s) == nil && s == want
}

// counts reports whether the line read so far is a complete chain message.
func (c *chainCounter) counts() bool {
	return c.obj && c.closed && !c.bad && c.depth == 0 && !c.inStr && c.chat && c.hasUUID
}

func (c *chainCounter) endLine(next int64) {
	if c.counts() {
		c.n++
	}
	*c = chainCounter{pos: c.pos, n: c.n, lastNL: next}
}

// pending is 1 when the bytes after the last newline are a complete chain
// message (the file's last line lacks its newline), else 0.
func (c *chainCounter) pending() int {
	if c.lastNL < c.pos && c.counts() {
		return 1
	}
	return 0
}
