// Package history keeps the prompt history: every prompt a person types,
// in every project, one JSON line each in <home>/history.jsonl, which is
// the file Claude Code keeps in ~/.claude. Up-arrow in the prompt box reads
// it back, the current session's prompts first.
//
// A line is
//
//	{"display":"…","pastedContents":{"1":{"id":1,"type":"text","content":"…"}},"timestamp":1700000000000,"project":"/abs/root","sessionId":"…"}
//
// with the timestamp in Unix milliseconds. A pasted text of up to
// [MaxInlinePaste] characters is kept in the line; a longer one is kept in
// <home>/paste-cache/<hash>.txt and the line holds only its hash. Pasted
// images are not kept.
//
// Writes are buffered by a [Writer] and appended under an advisory lock,
// so several cairn processes can share one file. [Read] walks the file from
// its end, so its cost depends on how far back it has to look, not on how
// long the history is.
package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/internal/jsonw"
)

const (
	// DefaultLimit is how many entries Read returns when asked for none or
	// fewer: Claude Code offers at most 100.
	DefaultLimit = 100

	// MaxInlinePaste is the longest pasted text, in UTF-16 code units (a
	// JavaScript string's length), kept inside a history line.
	MaxInlinePaste = 1024

	fileName     = "history.jsonl"
	pasteDirName = "paste-cache"

	// The lock is a separate file because Claude Code's own lock on the
	// history is a directory named history.jsonl.lock, which flock cannot
	// open.
	lockSuffix = ".flock"

	defaultBufSize = 32 << 10
	blockSize      = 64 << 10
	// maxLine bounds the memory Read spends on one line; longer lines
	// are skipped.
	maxLine = 4 << 20
)

// Paste types.
const (
	TypeText  = "text"
	TypeImage = "image"
)

// Paste is one pasted item, referenced from the prompt by a placeholder
// such as "[Pasted text #1 +12 lines]".
type Paste struct {
	ID   int
	Type string // TypeText or TypeImage
	// Content is the pasted text. Read fills it from the paste cache
	// when the line holds only a hash.
	Content string
	// ContentHash names <home>/paste-cache/<hash>.txt: the first 16 hex
	// characters of the SHA-256 of Content. Set for long texts.
	ContentHash string
	MediaType   string
	Filename    string
}

// Entry is one typed prompt.
type Entry struct {
	// Display is the prompt as shown, with placeholders for pastes.
	Display string
	// Pasted holds the pastes by id.
	Pasted map[int]Paste
	// Time is when the prompt was sent; stored to the millisecond.
	Time time.Time
	// Project is the project's root folder; Read filters on it.
	Project   string
	SessionID string
}

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("history writer is closed")

// Writer appends entries to the history of one home folder. It buffers
// lines and writes them on Flush, on Close, and when the buffer fills. Each
// write takes an exclusive flock on a lock file beside the history, so
// Writers in any number of processes can share a file; every write is of
// whole lines, and starts on a fresh line if the file ends in a torn one.
//
// A Writer is safe for concurrent use.
type Writer struct {
	path     string
	pasteDir string
	now      func() time.Time
	bufSize  int

	mu     sync.Mutex // guards buf and closed
	buf    []byte
	closed bool
}

// NewWriter returns a Writer for the history in home, the folder that
// holds history.jsonl (session.Home.Dir). now stamps entries that have no
// time; nil means time.Now. Nothing is opened until the first flush.
func NewWriter(home string, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{
		path:     filepath.Join(home, fileName),
		pasteDir: filepath.Join(home, pasteDirName),
		now:      now,
		bufSize:  defaultBufSize,
	}
}

// Add records e, stamping it with the clock if e.Time is zero. Pasted
// images are dropped; a pasted text longer than MaxInlinePaste is written
// to the paste cache now and replaced in the line by its hash. If that
// write fails, e is not recorded. The line itself waits in the buffer; ctx
// bounds the wait for the lock when the buffer is full and is flushed. If
// that flush fails, e stays buffered for the next one and the error is
// returned.
func (w *Writer) Add(ctx context.Context, e Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.Time.IsZero() {
		e.Time = w.now()
	}
	stored, err := w.storePastes(e.Pasted)
	if err != nil {
		return err
	}
	e.Pasted = stored
	line := appendLine(nil, e)

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.buf = append(w.buf, line...)
	if len(w.buf) >= w.bufSize {
		return w.flushLocked(ctx)
	}
	return nil
}

// Flush writes the buffered entries. If ctx ends while waiting for the
// lock, the entries stay buffered and ctx's error is returned.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.flushLocked(ctx)
}

// Close flushes the buffered entries and stops the Writer, even if the
// flush fails. It waits as long as another process holds the lock.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.flushLocked(context.Background())
	w.closed = true
	w.buf = nil
	return err
}

// Read flushes w and reads the history as the package's Read does, so
// entries added through w are included.
func (w *Writer) Read(ctx context.Context, project, sessionID string, limit int) ([]Entry, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return Read(ctx, filepath.Dir(w.path), project, sessionID, limit)
}

func (w *Writer) flushLocked(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return fmt.Errorf("create the folder for the prompt history: %w", err)
	}
	lock := flock.New(w.path+lockSuffix, flock.SetPermissions(0o600))
	ok, err := lock.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return fmt.Errorf("lock the prompt history %q: %w", w.path, err)
	}
	if !ok {
		return fmt.Errorf("lock the prompt history %q: %w", w.path, ctx.Err())
	}
	defer lock.Unlock()

	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the prompt history: %w", err)
	}
	torn, err := jsonl.EndsMidLine(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("check the end of the prompt history %q: %w", w.path, err)
	}
	out := w.buf
	if torn {
		out = append([]byte{'\n'}, w.buf...)
	}
	// One write of whole lines: with O_APPEND it lands after whatever
	// the other processes appended.
	if _, err := f.Write(out); err != nil {
		f.Close()
		return fmt.Errorf("append to the prompt history %q (is the disk full?): %w", w.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close the prompt history %q: %w", w.path, err)
	}
	w.buf = w.buf[:0]
	return nil
}

// storePastes returns the pastes as a line keeps them.
func (w *Writer) storePastes(in map[int]Paste) (map[int]Paste, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[int]Paste, len(in))
	for id, p := range in {
		if p.Type == TypeImage {
			continue
		}
		if p.Content == "" && p.ContentHash != "" {
			out[id] = p // already stored
			continue
		}
		if utf16Len(p.Content) > MaxInlinePaste {
			p.ContentHash = HashPaste(p.Content)
			if err := w.writePaste(p.ContentHash, p.Content); err != nil {
				return nil, err
			}
			p.Content = ""
		} else {
			p.ContentHash = ""
		}
		out[id] = p
	}
	return out, nil
}

func (w *Writer) writePaste(hash, content string) error {
	path := filepath.Join(w.pasteDir, hash+".txt")
	if _, err := os.Stat(path); err == nil {
		return nil // same hash, same text
	}
	if err := os.MkdirAll(w.pasteDir, 0o700); err != nil {
		return fmt.Errorf("create the paste cache: %w", err)
	}
	if err := renameio.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("store a pasted text in %q: %w", path, err)
	}
	return nil
}

// HashPaste is the name a long pasted text is stored under: the first 16
// hex characters of its SHA-256.
func HashPaste(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:8])
}

// utf16Len is len(s) as JavaScript counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// appendLine appends e as one history line, newline included, with keys
// in Claude Code's order and pastes in ascending id order, as JavaScript
// orders integer keys.
func appendLine(dst []byte, e Entry) []byte {
	var pasted jsonw.Object
	ids := make([]int, 0, len(e.Pasted))
	for id := range e.Pasted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := e.Pasted[id]
		var o jsonw.Object
		o.Raw("id", strconv.AppendInt(nil, int64(p.ID), 10))
		o.Str("type", p.Type)
		if p.Content != "" || p.ContentHash == "" {
			o.Str("content", p.Content)
		}
		o.OptStr("contentHash", p.ContentHash)
		o.OptStr("mediaType", p.MediaType)
		o.OptStr("filename", p.Filename)
		pasted.Raw(strconv.Itoa(id), o.Bytes())
	}
	var ms int64
	if !e.Time.IsZero() {
		ms = e.Time.UnixMilli()
	}
	var o jsonw.Object
	o.Str("display", e.Display)
	o.Raw("pastedContents", pasted.Bytes())
	o.Raw("timestamp", strconv.AppendInt(nil, ms, 10))
	o.Str("project", e.Project)
	o.Str("sessionId", e.SessionID)
	dst = append(dst, o.Bytes()...)
	return append(dst, '\n')
}

type wireEntry struct {
	Display        string                     `json:"display"`
	PastedContents map[string]json.RawMessage `json:"pastedContents"`
	Timestamp      json.Number                `json:"timestamp"`
	Project        *string                    `json:"project"`
	SessionID      string                     `json:"sessionId"`
}

type wirePaste struct {
	ID          *int   `json:"id"`
	Type        string `json:"type"`
	Content     string `json:"content"`
	ContentHash string `json:"contentHash"`
	MediaType   string `json:"mediaType"`
	Filename    string `json:"filename"`
}

// decodeLine parses one history line. It reports false for anything that
// is not an entry: a torn line, garbage, a line without a project. Null
// bytes and blanks around the JSON are ignored. A paste that does not parse
// is left out; the rest of the entry is kept.
func decodeLine(line []byte) (Entry, bool) {
	line = bytes.Trim(line, "\x00 \t\r\n")
	if len(line) == 0 || line[0] != '{' {
		return Entry{}, false
	}
	var w wireEntry
	if err := json.Unmarshal(line, &w); err != nil || w.Project == nil {
		return Entry{}, false
	}
	e := Entry{
		Display:   w.Display,
		Time:      millis(w.Timestamp),
		Project:   *w.Project,
		SessionID: w.SessionID,
	}
	for key, raw := range w.PastedContents {
		id, err := strconv.Atoi(key)
		if err != nil || strconv.Itoa(id) != key {
			continue // not a key JavaScript would write for a number
		}
		var wp wirePaste
		if json.Unmarshal(raw, &wp) != nil {
			continue
		}
		p := Paste{
			ID:          id,
			Type:        wp.Type,
			Content:     wp.Content,
			ContentHash: wp.ContentHash,
			MediaType:   wp.MediaType,
			Filename:    wp.Filename,
		}
		if wp.ID != nil {
			p.ID = *wp.ID
		}
		if e.Pasted == nil {
			e.Pasted = make(map[int]Paste)
		}
		e.Pasted[id] = p
	}
	return e, true
}

// millis converts a JavaScript millisecond timestamp; a missing, zero or
// unrepresentable one is the zero time.
func millis(n json.Number) time.Time {
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.Abs(f) >= 1<<53 {
		return time.Time{}
	}
	ms := int64(f)
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Read returns up to limit entries of project's history (DefaultLimit if
// limit <= 0), as up-arrow offers them: it takes the newest limit entries
// of the project, then puts those of sessionID first; each group is newest
// first. Pastes stored by hash are loaded from the paste cache; one whose
// file is gone is left out. Lines that do not parse are skipped. A missing
// history is empty, not an error.
//
// Read walks the file backwards in blocks and stops once it has limit
// entries, so it reads only as far back as it must, and its memory does
// not grow with the file.
func Read(ctx context.Context, home, project, sessionID string, limit int) ([]Entry, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	path := filepath.Join(home, fileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the prompt history: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open the prompt history: %w", err)
	}
	entries, err := latest(ctx, f, fi.Size(), project, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("read the prompt history %q: %w", path, err)
	}
	pasteDir := filepath.Join(home, pasteDirName)
	for i := range entries {
		resolvePastes(pasteDir, &entries[i])
	}
	return entries, nil
}

// latest selects and orders the entries of r, a history of size bytes.
func latest(ctx context.Context, r io.ReaderAt, size int64, project, sessionID string, limit int) ([]Entry, error) {
	var mine, others []Entry
	// A line of project holds the project's path, verbatim unless JSON
	// needs to escape it; lines without it need no decoding.
	needle := []byte(project)
	if !verbatimInJSON(project) {
		needle = nil
	}
	sc := jsonl.NewBackward(r, size, blockSize, maxLine, nil)
	for len(mine)+len(others) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, ok, err := sc.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		line := l.Bytes
		if needle != nil && !bytes.Contains(line, needle) {
			continue
		}
		e, ok := decodeLine(line)
		if !ok || e.Project != project {
			continue
		}
		if e.SessionID == sessionID {
			mine = append(mine, e)
		} else {
			others = append(others, e)
		}
	}
	return append(mine, others...), nil
}

// verbatimInJSON reports whether every JSON encoder that cairn or Claude
// Code uses writes s unchanged between the quotes: valid UTF-8 without
// control characters, quotes, backslashes, line or paragraph separators,
// or the characters Go escapes for HTML.
func verbatimInJSON(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// resolvePastes loads the pastes of e stored by hash, and drops those
// whose text is not in the paste cache.
func resolvePastes(dir string, e *Entry) {
	for id, p := range e.Pasted {
		if p.Content != "" || p.ContentHash == "" {
			continue
		}
		if !isHex(p.ContentHash) {
			delete(e.Pasted, id)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, p.ContentHash+".txt"))
		if err != nil {
			delete(e.Pasted, id)
			continue
		}
		p.Content = string(b)
		e.Pasted[id] = p
	}
}

// isHex reports whether s can name a paste file: hex digits only, so a
// crafted hash cannot point outside the paste cache.
func isHex(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

var placeholder = regexp.MustCompile(`\[Pasted text #(\d+)(?: \+\d+ lines)?\]`)

// Placeholder is the text that stands for pasted text in a prompt:
// "[Pasted text #1]", or "[Pasted text #1 +3 lines]" when the text has
// three line breaks.
func Placeholder(id int, text string) string {
	if n := strings.Count(text, "\n"); n > 0 {
		return fmt.Sprintf("[Pasted text #%d +%d lines]", id, n)
	}
	return fmt.Sprintf("[Pasted text #%d]", id)
}

// ExpandPastes returns display with each pasted-text placeholder replaced
// by its paste's text, giving back the prompt as it was sent. Placeholders
// without a matching text paste, and image placeholders, are kept. Text
// inside a paste is not expanded again.
func ExpandPastes(display string, pasted map[int]Paste) string {
	if len(pasted) == 0 {
		return display
	}
	return placeholder.ReplaceAllStringFunc(display, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		id, err := strconv.Atoi(sub[1])
		if err != nil {
			return m
		}
		p, ok := pasted[id]
		if !ok || p.Type != TypeText || (p.Content == "" && p.ContentHash != "") {
			return m
		}
		return p.Content
	})
}
