package serve

import (
	"bytes"
	"container/list"
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/transcript"
)

// Index keeps, for the big sessions it has read, where the line of each
// event begins (by a hash of the event id), so that a link to any page of
// a session — one the server never served, shared a third of the way
// back — reads the page and not the distance from the end. An index
// describes one file: its identity (device and inode, see
// transcript.Identified) and the bytes it has read from the start. It is
// extended over lines appended since, and dropped, never used, when the
// file is another or shorter or the last line it read is no longer there.
// A span it gives is checked before use (it must begin a line, the event
// it names), so a stale one costs a scan, never a wrong page; the server
// scans too for an id the index lacks before it answers 400. Memory is
// bounded by MaxBytes over all sessions, the least recently used dropped
// first. With
// Dir set, indexes outlive the process: a session's is read back (checked
// the same way) instead of built again.
// A zero Index is ready; it is safe for concurrent use.
type Index struct {
	// MaxBytes bounds the memory the indexes hold (DefaultIndexBytes
	// when 0).
	MaxBytes int64
	// MinBytes is the smallest session indexed (MinIndexBytes when 0).
	MinBytes int64
	// Dir, when set, is where indexes are kept between runs (a file a
	// session, written once built): a server started afresh reads the
	// index of a session instead of building it, checked as above.
	Dir string
	// Context, when set, stops the builds in the background once done
	// (at shutdown): a build stopped is not kept, and is done again by
	// the next run.
	Context context.Context

	mu      sync.Mutex
	m       map[string]*list.Element // of *fileIndex, by session
	lru     list.List                // most recently used first
	used    int64
	queue   []warmJob       // the indexes to build in the background
	queued  map[string]bool // the sessions in queue or being built
	working bool            // a goroutine builds what is queued
	wg      sync.WaitGroup
}

// DefaultIndexBytes is an Index's default memory bound: the indexes of
// some thirty 100 MB sessions.
const DefaultIndexBytes = 64 << 20

// MinIndexBytes is the smallest session an Index indexes by default:
// below it, the scan back from the end costs a few milliseconds at most.
const MinIndexBytes = 4 << 20

// entryBytes is what one indexed line is charged in memory, map overhead
// included: a little more than it takes (BenchmarkHistory100MB's
// index-build reports both).
const entryBytes = 48

// idHash is FNV-1a: stable across runs, so an index can be kept on disk.
func idHash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

type fileIndex struct {
	session string
	id      string // the file's identity

	mu    sync.Mutex
	end   int64    // the lines wholly before end are indexed
	last  lastLine // the last line read, ending just before end
	spans map[uint64]span
	cost  int64 // what it was charged, in bytes
	saved int64 // end when it was last written to Dir
}

// lastLine is where the last line read lies and a hash of its bytes.
type lastLine struct {
	off, n int64
	hash   uint64
}

// lookup returns the span of the line of event id in src, if the index of
// session describes src and holds it; ok is false when the index should
// be built (it is missing or was dropped as stale).
func (x *Index) lookup(ctx context.Context, src transcript.Source, session, id string) (sp span, found, ok bool) {
	fi := x.get(session)
	if fi != nil && !fi.matches(src) {
		x.drop(session, fi)
		fi = nil
	}
	if fi == nil {
		// Kept by an earlier run?
		if fi = x.load(session); fi == nil || !fi.matches(src) {
			return span{}, false, false
		}
		x.put(fi, len(fi.spans))
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if src.Size() > fi.end {
		if err := fi.read(ctx, src); err != nil {
			return span{}, false, false // Build reads the rest
		}
		x.charge(fi, len(fi.spans))
	}
	sp, found = fi.spans[idHash([]byte(id))]
	return sp, found, true
}

// current reports whether the index of session held in memory describes
// src and has read all of it. It reads nothing of src but the last line
// the index read (to check it): what is missing or behind is left to a
// build in the background, so a newest page never waits on one.
func (x *Index) current(src transcript.Source, session string) bool {
	fi := x.get(session)
	if fi == nil || !fi.matches(src) {
		return false
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.end >= src.Size()
}

// matches reports whether fi still describes src: the same file, at least
// as long, its last read line still in place.
func (fi *fileIndex) matches(src transcript.Source) bool {
	id := identityOf(src)
	if id == "" || id != fi.id {
		return false
	}
	fi.mu.Lock()
	end, last := fi.end, fi.last
	fi.mu.Unlock()
	if src.Size() < end {
		return false
	}
	if last.n == 0 {
		return true
	}
	// The line and its newline, byte for byte where it was.
	b := make([]byte, last.n+1)
	if n, err := src.ReadAt(b, last.off); n != len(b) && err != nil {
		return false
	}
	return b[last.n] == '\n' && idHash(b[:last.n]) == last.hash
}

// read indexes the whole lines of src after fi.end; fi.mu is held.
func (fi *fileIndex) read(ctx context.Context, src transcript.Source) error {
	start := fi.end
	var last lastLine
	err := jsonl.Forward(io.NewSectionReader(src, start, src.Size()-start), jsonl.MaxLineBytes, func(string) {}, func(l jsonl.Line) error {
		if l.No%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if l.Torn {
			return jsonl.ErrStop // being written: read again next time
		}
		off := start + l.Offset
		if id := topUUID(l.Bytes); id != nil {
			fi.spans[idHash(id)] = span{off: off, n: int64(len(l.Bytes))}
		}
		fi.end = off + int64(len(l.Bytes)) + 1
		last = lastLine{off: off, n: int64(len(l.Bytes))}
		return nil
	})
	if last.n > 0 {
		// Hashed once, at the end: the bytes the next use checks.
		b := make([]byte, last.n)
		if n, rerr := src.ReadAt(b, last.off); n != len(b) && rerr != nil {
			fi.end, fi.last = 0, lastLine{} // read afresh next time
			clear(fi.spans)
			return rerr
		}
		last.hash = idHash(b)
		fi.last = last
	}
	return err
}

// topUUID returns the top-level uuid of a line (the last, as a decoder
// keeps), nil when it has none. It reads the line once, skipping strings
// by their quotes, without checking it: a line that is not JSON is
// refused where a span is used (a conversation event must decode).
func topUUID(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"uuid"`)) {
		return nil
	}
	var out []byte
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			end := jsonscan.SkipString(line, i)
			if depth == 1 && string(line[i:end]) == `"uuid"` {
				j := jsonscan.SkipSpace(line, end)
				if j < len(line) && line[j] == ':' {
					if j = jsonscan.SkipSpace(line, j+1); j < len(line) && line[j] == '"' {
						vend := jsonscan.SkipString(line, j)
						out = nil
						if vend-j >= 2 && line[vend-1] == '"' {
							out = line[j+1 : vend-1]
						}
						if f := jsonscan.StringFlags(line[j:vend]); f != 0 {
							s, err := jsonscan.Unquote(line[j:vend], f)
							out = []byte(s)
							if err != nil {
								out = nil
							}
						}
						end = vend
					}
				}
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return out
}

// Build indexes session from src, or extends its index over the lines
// appended since; a session smaller than MinBytes or a source that
// cannot name its file is left alone.
func (x *Index) Build(ctx context.Context, src transcript.Source, session string) error {
	return x.build(ctx, src, session, false)
}

// build is Build; with keepOnly (and Dir set) it brings the index kept in
// Dir up to date and leaves memory as it was, unless the session's index
// was there already.
func (x *Index) build(ctx context.Context, src transcript.Source, session string, keepOnly bool) error {
	if !x.wants(src) || keepOnly && x.Dir == "" {
		return nil
	}
	fi := x.get(session)
	if fi != nil && !fi.matches(src) {
		x.drop(session, fi)
		fi = nil
	}
	inMemory := fi != nil
	if fi == nil {
		if fi = x.load(session); fi != nil && !fi.matches(src) {
			fi = nil
		}
	}
	if fi == nil {
		fi = &fileIndex{session: session, id: identityOf(src), spans: map[uint64]span{}}
	}
	fi.mu.Lock()
	err := fi.read(ctx, src)
	n := len(fi.spans)
	if err == nil && fi.end != fi.saved {
		if err = x.save(fi); err == nil {
			fi.saved = fi.end
		}
	}
	fi.mu.Unlock()
	if inMemory || !keepOnly {
		x.put(fi, n)
	}
	return err
}

// warmJob is an index to build in the background.
type warmJob struct {
	session  string
	open     func(context.Context) (transcript.Source, error)
	keepOnly bool
}

// warm queues the index of session for a build in the background, from
// the source open gives (closed after): first in line for a session
// someone is looking at, last with keepOnly (see build). One is built at
// a time.
func (x *Index) warm(session string, open func(context.Context) (transcript.Source, error), keepOnly bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	j := warmJob{session, open, keepOnly}
	if x.queued[session] {
		if keepOnly {
			return
		}
		// Someone is looking at it now: to the front, if still waiting.
		for i, q := range x.queue {
			if q.session == session {
				x.queue = append(x.queue[:i], x.queue[i+1:]...)
				x.queue = append([]warmJob{j}, x.queue...)
				break
			}
		}
		return
	}
	if x.queued == nil {
		x.queued = map[string]bool{}
	}
	x.queued[session] = true
	if keepOnly {
		x.queue = append(x.queue, j)
	} else {
		x.queue = append([]warmJob{j}, x.queue...)
	}
	if !x.working {
		x.working = true
		x.wg.Add(1)
		go x.work()
	}
}

// work builds the queued indexes, one after the other, until none is left.
func (x *Index) work() {
	defer x.wg.Done()
	ctx := x.Context
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		x.mu.Lock()
		if len(x.queue) == 0 {
			x.working = false
			x.mu.Unlock()
			return
		}
		j := x.queue[0]
		x.queue = x.queue[1:]
		x.mu.Unlock()
		if ctx.Err() != nil {
			// Stopped: what is left waits for the next run.
		} else if src, err := j.open(ctx); err == nil {
			x.build(ctx, src, j.session, j.keepOnly) // a failure leaves the scan, as before
			src.Close()
		}
		x.mu.Lock()
		delete(x.queued, j.session)
		x.mu.Unlock()
	}
}

// WarmAll queues for a build in the background the index of each session
// sessions lists that is big enough for one, newest first, so that the
// indexes kept in Dir are up to date (without Dir it does nothing) and
// the first link into a session's history, even to a server started
// afresh, costs a page, not a scan. It returns once the sessions are
// listed; what it queued is built after what people look at. First it
// removes the temporary files a run stopped while saving left in Dir.
func (x *Index) WarmAll(ctx context.Context, sessions Sessions) error {
	if x.Dir == "" {
		return nil
	}
	x.removeStale(time.Now())
	q := ListQuery{Limit: PageSize}
	for {
		page, next, err := sessions.List(ctx, q)
		if err != nil {
			return err
		}
		for _, in := range page {
			if in.Bytes >= x.min() {
				id := in.SessionID
				x.warm(id, func(ctx context.Context) (transcript.Source, error) { return sessions.Source(ctx, id) }, true)
			}
		}
		if next == "" || ctx.Err() != nil {
			return ctx.Err()
		}
		q.Cursor = next
	}
}

// wants reports whether src is worth an index.
func (x *Index) wants(src transcript.Source) bool {
	return src.Size() >= x.min() && identityOf(src) != ""
}

func (x *Index) min() int64 {
	if x.MinBytes > 0 {
		return x.MinBytes
	}
	return MinIndexBytes
}

// Indexed returns how many bytes of session's file its index has read,
// 0 when it has none.
func (x *Index) Indexed(session string) int64 {
	x.mu.Lock()
	e, ok := x.m[session]
	x.mu.Unlock()
	if !ok {
		return 0
	}
	fi := e.Value.(*fileIndex)
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.end
}

// Bytes returns the memory the indexes are charged, over all sessions.
func (x *Index) Bytes() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.used
}

// saveEvery is how far an index kept in Dir may fall behind the one in
// memory before it is written again.
const saveEvery = 8 << 20

// behind reports whether the index of session kept in Dir is saveEvery
// behind the one in memory.
func (x *Index) behind(session string) bool {
	if x.Dir == "" {
		return false
	}
	x.mu.Lock()
	e, ok := x.m[session]
	x.mu.Unlock()
	if !ok {
		return false
	}
	fi := e.Value.(*fileIndex)
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.end-fi.saved >= saveEvery
}

// Wait waits for the indexes being built in the background.
func (x *Index) Wait() { x.wg.Wait() }

func (x *Index) get(session string) *fileIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.m[session]
	if !ok {
		return nil
	}
	x.lru.MoveToFront(e)
	return e.Value.(*fileIndex)
}

func (x *Index) drop(session string, fi *fileIndex) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.m[session]; ok && e.Value.(*fileIndex) == fi {
		x.remove(e)
	}
}

// forget drops the index of session, in memory and kept in Dir: it was
// found stale (it lacked an event the file holds).
func (x *Index) forget(session string) {
	x.mu.Lock()
	if e, ok := x.m[session]; ok {
		x.remove(e)
	}
	x.mu.Unlock()
	if path := x.indexPath(session); path != "" {
		os.Remove(path)
	}
}

// remove forgets e; x.mu is held.
func (x *Index) remove(e *list.Element) {
	fi := e.Value.(*fileIndex)
	x.lru.Remove(e)
	delete(x.m, fi.session)
	x.used -= fi.cost
}

func (x *Index) max() int64 {
	if x.MaxBytes > 0 {
		return x.MaxBytes
	}
	return DefaultIndexBytes
}

// put installs fi as its session's index, dropping the least recently
// used ones beyond the bound.
func (x *Index) put(fi *fileIndex, entries int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[string]*list.Element{}
	}
	if e, ok := x.m[fi.session]; ok {
		if e.Value.(*fileIndex) != fi {
			x.remove(e)
		}
	}
	if _, ok := x.m[fi.session]; !ok {
		x.m[fi.session] = x.lru.PushFront(fi)
	}
	x.rechargeLocked(fi, entries)
}

// charge accounts for an index grown by lines appended.
func (x *Index) charge(fi *fileIndex, entries int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.m[fi.session]; ok && e.Value.(*fileIndex) == fi {
		x.rechargeLocked(fi, entries)
	}
}

// rechargeLocked sets fi's cost from its number of entries and evicts
// beyond the bound (fi too, last, when it alone is over); x.mu is held.
func (x *Index) rechargeLocked(fi *fileIndex, entries int) {
	cost := int64(entries)*entryBytes + 256
	x.used += cost - fi.cost
	fi.cost = cost
	for e := x.lru.Back(); e != nil && x.used > x.max(); {
		prev := e.Prev()
		if e.Value.(*fileIndex) != fi {
			x.remove(e)
		}
		e = prev
	}
	if e, ok := x.m[fi.session]; ok && e.Value.(*fileIndex) == fi && x.used > x.max() {
		x.remove(e) // too big alone: its session is scanned
	}
}

// identityOf returns src's file identity, "" when it cannot name one.
func identityOf(src transcript.Source) string {
	if s, ok := src.(transcript.Identified); ok {
		return s.Identity()
	}
	return ""
}
