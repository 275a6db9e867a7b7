package transcript

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/model"
)

// LoadOptions adjust Load.
type LoadOptions struct {
	// Leaf resumes from this entry instead of the session's current leaf
	// (rewinding the conversation, or resuming at a chosen message).
	Leaf string
	// History follows compactions back to the start of the session instead
	// of stopping at the last compact boundary: the scroll-back a person
	// reads, not the context the model gets. It reads the whole file.
	History bool
	// NoRepair leaves the conversation as the file has it, without the
	// answers and replies a resume adds (see Conversation.Repaired): for
	// reading back a live session.
	NoRepair bool
	// NewUUID and Now make the entries the repair adds; uuid.NewString and
	// time.Now when nil.
	NewUUID func() string
	Now     func() time.Time
	// Cache, when set, holds entries decoded by earlier loads of the same
	// file and keeps those of this one: lines it holds are not decoded
	// again.
	Cache *LineCache
	// Map lets a load that reads more than a few megabytes of a file
	// keep the entries' messages, and their tool results' string
	// contents, as slices of the file's read-only mapping instead of
	// copies (see filemap): those bytes stay in the page cache until a
	// request sends them. It is for a process that reads the
	// conversation once (the session that resumes it, a command that
	// writes it out): the mapping lasts as long as the process, and
	// a file cut shorter meanwhile fails the requests that would read
	// past its end (filemap.Check). Entries a Cache or a caller keeps
	// from such a load hold the mapping too, in later loads as well: a
	// reader of them outside a request is not guarded by that check.
	// Sources that are not files ignore it.
	Map bool
	// Raw names line types outside the chain whose lines a caller reads
	// itself, such as the file history's snapshots: the lines of those
	// types that the load reads are kept whole in Conversation.Raw, so
	// the caller need read again only the part of the file before
	// Conversation.RawFrom, which is none of it when the conversation
	// goes back to the start of the file. For types of few lines: each
	// is copied.
	Raw []string
}

// RawLine is a line of the file as it was read: where it starts, and its
// bytes without the newline.
type RawLine struct {
	Offset int64
	Bytes  []byte
}

// Conversation is a session rebuilt from its transcript.
type Conversation struct {
	SessionID string
	// Entries is the active chain from its root (or last compact boundary)
	// to the leaf, with preserved segments spliced in after their anchors,
	// snipped entries left out, and parallel tool results that hang off
	// side branches re-attached after their calls. It holds chain entries
	// of every type; Messages turns it into what the model is sent.
	// The entries are shared, with a LineCache the load was given and
	// with later loads that take them from it: callers read them and may
	// copy them, but never change one in place.
	Entries []*Entry
	// Leaf is the uuid of the last entry of the chain.
	Leaf string
	// LastPrompt is the newest last-prompt record's text, if any.
	LastPrompt string
	// CustomTitle is the newest name the session was given (/rename) of
	// the lines read (not those read only to fill the cache), if any.
	// cairn writes the name again after each compact boundary.
	CustomTitle string
	// Warnings name each line that was skipped or repaired, and why.
	Warnings []string
	// BytesRead is how much of the file was read to rebuild the chain
	// (lines LoadOptions.Cache held were not read).
	BytesRead int64
	// Repaired counts the entries at the end of Entries that are not in the
	// file: answers and replies added so the conversation can continue (see
	// repair). A writer that continues the session appends them.
	Repaired int
	// Preserved holds the uuids of messages a compaction kept verbatim.
	// Their usage figures describe the context before the compaction, so
	// token counting ignores them (SPEC R5).
	Preserved map[string]bool
	// Cleared holds the tool_use ids whose results the microcompact
	// boundaries of the chain cleared: a resumed session keeps sending
	// them cleared (SPEC C2).
	Cleared map[string]bool
	// Raw holds, in file order, the lines of the types LoadOptions.Raw
	// names among those the load read from the file. RawFrom is where
	// the first line it read starts: it read every line from there to
	// the end of the file and none before (lines a LoadOptions.Cache held
	// from an earlier load were not read; the file's size when it read
	// none). Lines the scanner skipped as damaged are in neither part.
	Raw     []RawLine
	RawFrom int64
	// Collapsed holds the spans the context collapse commits of the chain
	// folded, in commit order: a resumed session sends them folded as the
	// live one did (SPEC C3). A compact boundary ends the chain, so commits
	// made before it do not count.
	Collapsed []CollapseSpan
}

// FromFile returns the entries the file holds: Entries without those the
// repair added at their end (see Repaired).
func (c *Conversation) FromFile() []*Entry { return c.Entries[:len(c.Entries)-c.Repaired] }

// Repairs returns copies of the entries at the end of Entries that are
// not in the file (see Repaired), for a writer to append.
func (c *Conversation) Repairs() []Entry {
	out := make([]Entry, c.Repaired)
	for i, e := range c.Entries[len(c.Entries)-c.Repaired:] {
		out[i] = *e
	}
	return out
}

// Load rebuilds the conversation of the transcript in src. It reads the
// file backwards from the end and stops as soon as the active chain is
// complete, so history before the last compact boundary costs nothing.
// Lines that are not valid entries are skipped with a warning; nothing
// else is dropped. Load never modifies the source.
func Load(ctx context.Context, src Source, opts LoadOptions) (*Conversation, error) {
	l := &loader{
		ctx:         ctx,
		removed:     make(map[string]bool),
		byAnchor:    make(map[string]*boundaryInfo),
		byPreserved: make(map[string]*boundaryInfo),
		history:     opts.History,
		cache:       opts.Cache,
		tornAt:      -1,
		replayAt:    -1,
		conv:        &Conversation{},
		arenas:      make([]arena, runtime.GOMAXPROCS(0)),
	}
	if len(opts.Raw) > 0 {
		l.raw = make(map[string]bool, len(opts.Raw))
		for _, t := range opts.Raw {
			l.raw[t] = true
		}
	}
	for i := range l.arenas {
		l.arenas[i].records = true
	}
	defer func() {
		if l.dec != nil {
			l.dec.close()
		}
	}()
	if r, ok := src.(reopener); ok {
		l.file = r.fileRef()
	}
	size := src.Size()
	var scanned io.ReaderAt = src
	if opts.Cache != nil {
		// Lines a load already read from the start of the file are taken
		// from the cache; only what was appended since is read.
		var prefix int64
		var lines []cachedLine
		prefix, lines, l.cacheGen = opts.Cache.prefixFor(src)
		if prefix > 0 {
			l.base, l.replay, l.replayAt = prefix, lines, len(lines)-1
			scanned = io.NewSectionReader(src, prefix, size-prefix)
		}
	}
	l.size = size - l.base
	l.readTo = l.size
	l.rawFrom = size
	// Room for the first megabyte's entries, and for those of a cached
	// prefix, which are replayed into the map (see decodeBatch for a load
	// that reads on).
	l.byUUID = make(map[string]*Entry, len(l.replay)+entriesHint(min(l.size, readAheadAfter)))
	if m, ok := src.(mapper); ok && opts.Map {
		if fm := m.mapFrom(l.base); fm != nil {
			for i := range l.arenas {
				l.arenas[i].fmap = fm
			}
		}
	}
	l.scanned, l.appliedAt = scanned, l.base+l.size
	l.sc = jsonl.NewBackward(scanned, l.size, 0, maxLine, func(s string) {
		// Given with the batch read (see takeBatch), which may be read
		// ahead of its turn.
		l.scanWarns = append(l.scanWarns, s)
	})
	// Entries keep copies of what they hold: once a batch's lines are
	// decoded, its block's buffer can be read into again.
	l.sc.Buffers(l.block)
	// A long line that does not end as an object does is not read whole
	// to find that it is not one (see decodeLine).
	l.sc.SkipLong(func(tail []byte) bool { return !closesObject(tail) })
	if err := l.findLeaf(opts.Leaf); err != nil {
		return nil, err
	}
	if l.leaf == nil {
		l.finish(src)
		return l.conv, nil
	}
	if err := l.walk(); err != nil {
		return nil, err
	}
	decodeMessages(l.chain)
	l.reattach()
	l.conv.Cleared = clearedIn(l.conv.Entries, l.warnf)
	l.conv.Collapsed = collapsedIn(l.conv.Entries, l.warnf)
	for _, e := range l.conv.Entries {
		if bi := l.byPreserved[e.UUID]; bi != nil && bi.checked {
			if l.conv.Preserved == nil {
				l.conv.Preserved = make(map[string]bool)
			}
			l.conv.Preserved[e.UUID] = true
		}
	}
	if !opts.History && !opts.NoRepair {
		l.repair(opts.NewUUID, opts.Now)
	}
	l.finish(src)
	return l.conv, nil
}

// finish notes how much was read, numbers the warnings' lines, and gives
// the cache the prefix of the file this load read whole.
func (l *loader) finish(src Source) {
	size := src.Size()
	defer func() {
		// After prefix, whose reading on for the cache applies lines too.
		slices.Reverse(l.conv.Raw) // applied last line first
		l.conv.RawFrom = l.rawFrom
	}()
	// Lines taken from the cache were not read.
	l.conv.BytesRead = size - (l.base + l.readTo)
	l.numberLines(src)
	if l.cache == nil {
		return
	}
	prefix, lines := l.prefix(size)
	l.cache.record(prefix, lines, l.cacheGen)
}

// prefix returns the lines of the file, in file order, that the next load
// with the cache need not read, and how many bytes they span: nil when
// this load did not read the whole file. Lines before the chain near the
// start of the file are read now to that end.
func (l *loader) prefix(size int64) (int64, []cachedLine) {
	// The cached prefix's lines are replayed, not read: what is left to
	// read is the scanned section's part before the scanner.
	if !l.bof && l.readTo <= drainLimit {
		// The chain starts just after the file's first lines (the records
		// before the first prompt): read those too, so the whole file is
		// cached. The conversation is built; they change nothing in it.
		l.mute = true
		for !l.bof {
			if _, err := l.readLine(); err != nil {
				break
			}
		}
	}
	if !l.bof || l.scanWarned {
		l.cacheLines(l.seen)
		return 0, nil
	}
	// Every line was read: the file up to its last whole line is the
	// prefix the next load need not read. A last line without its newline
	// may still be completed (or a newline put after it), so it is left
	// out.
	lines := l.seen
	slices.Reverse(lines)
	prefix := size
	if n := len(lines); n > 0 && l.tornAt >= 0 && lines[n-1].off == l.tornAt {
		prefix, lines = l.tornAt, lines[:n-1]
	} else if l.tornAt >= 0 {
		prefix = l.tornAt
	}
	if prefix == 0 || len(lines) == 0 {
		l.cacheLines(l.seen)
		return 0, nil
	}
	l.cacheLines(l.seen[len(lines):])
	return prefix, lines
}

// cacheLines gives the cache the lines that decoded without a warning,
// for later loads to take by their offset instead of decoding them again.
// Lines a prefix holds need not be given: the next load does not read them.
// A line read after the load stopped summing (see readBatch) is read again
// from the file and summed here.
func (l *loader) cacheLines(lines []cachedLine) {
	var buf []byte
	for _, cl := range lines {
		if cl.e == nil || cl.warns != nil {
			continue
		}
		if cl.n < 0 && !l.sumAgain(&cl, &buf) {
			continue
		}
		l.cache.store(cl, l.cacheGen)
	}
}

// sumAgain sums cl, a line the load did not sum, from the file; false
// when it cannot read it (the line is then not cached).
func (l *loader) sumAgain(cl *cachedLine, buf *[]byte) bool {
	size := int(cl.sum) // its length, for a line not summed
	if cl.off < l.base {
		return false
	}
	*buf = slices.Grow((*buf)[:0], size)[:size]
	if k, _ := l.scanned.ReadAt(*buf, cl.off-l.base); k != size {
		return false
	}
	n, sum := lineSum(*buf)
	cl.n, cl.sum = int32(n), sum
	return true
}

// boundaryInfo is what a compact boundary with preserved messages changes
// in the chain: the preserved messages hang off the anchor (the summary),
// and whatever followed the anchor continues from the last of them.
type boundaryInfo struct {
	entry  *Entry
	anchor string
	head   string
	tail   string
	// list is the explicit order of preserved messages, when the boundary
	// names them (preservedMessages.uuids); nil means follow parents from
	// tail to head.
	list []string
	// checked is set once the segment was found whole in the file; broken
	// once it was not, and the boundary is then applied without it.
	checked, broken bool
}

type loader struct {
	ctx context.Context
	// raw is the set of LoadOptions.Raw; rawFrom the offset of the
	// lowest line applied from the file (see Conversation.RawFrom).
	raw     map[string]bool
	rawFrom int64
	sc      *jsonl.Backward
	bof     bool
	history bool
	cache   *LineCache

	// With a cached prefix, the scanner reads the file from base on and
	// replay[:replayAt+1] are the prefix's lines still to give, last first.
	base     int64
	replay   []cachedLine
	replayAt int
	// cacheGen is the cache's generation when the load took it: what the
	// load leaves there is dropped if the cache forgot since.
	cacheGen   uint64
	seen       []cachedLine // every line given, last first, for the cache
	scanWarned bool         // the scanner skipped something itself
	tornAt     int64        // where the file's torn last line starts; -1 if none
	mute       bool         // reading past the conversation: no warnings

	// batch holds the lines of the batch being applied (see decodeBatch);
	// batchBuf is its storage, and freeBatches that of batches applied,
	// to reuse. queue holds the batches read and not yet applied, oldest
	// first; eof is set once the last was read. readTo is the scanner's
	// offset after the last batch taken from the queue.
	batch, batchBuf []decoded
	freeBatches     [][]decoded
	queue           []*readAhead
	eof             bool
	readTo          int64
	// blocks are buffers to read blocks into again; got are those the
	// batch being read got, held the buffer of the last batch read when
	// it was taken from the queue (see decodeBatch).
	blocks, got [][]byte
	held        []byte
	// arenas hold the entries' bodies: the loader's own, then one per
	// goroutine of dec, which decodes the batches read (nil until a batch
	// needs it; the loader decodes too while it waits); file is where
	// results too large to keep are left, nil when the source cannot be
	// opened again.
	arenas    []arena
	dec       *decoder
	file      *fileRef
	size      int64    // of the scanned part of the file
	scanWarns []string // the scanner's, reading the next batch

	// scanned is what the scanner reads (the file after base); appliedAt
	// is the offset in the file of the last line applied (or replayed):
	// lines before it are yet to be, those from it on are indexed.
	scanned   io.ReaderAt
	appliedAt int64
	// readingOn is set once the load applied readAheadAfter bytes: it
	// most likely reads much more of the file (see decodeBatch).
	readingOn bool

	byUUID      map[string]*Entry
	order       []*Entry // chain entries in the order read (newest first)
	removed     map[string]bool
	byAnchor    map[string]*boundaryInfo
	byPreserved map[string]*boundaryInfo // by the uuid of a preserved message

	newestChain    *Entry
	newestSide     *Entry // the newest sidechain line: a subagent transcript's leaf
	lastPromptLeaf string
	promptNewer    bool // a last-prompt record was read before any chain line
	leaf           *Entry
	chain          []*Entry
	inChain        map[string]bool

	conv *Conversation
	// unknownType is the first line type read that cairn does not know;
	// it is warned about once.
	unknownType string
	// lineWarnings are warnings that name a line by byte offset (the
	// backward scan does not know line numbers); see numberLines.
	lineWarnings []lineWarning
}

type lineWarning struct {
	index  int // in conv.Warnings
	offset int64
	// scanned is set on a line the scanner gave (not one of a cached
	// prefix), newlines being its jsonl.Line.Newlines.
	scanned  bool
	newlines int
}

// numberLines rewrites warnings about skipped lines to name them by line
// number, as a person opening the file would look for them. The scanner
// counted the newlines of what it read; those of the part of the file
// it did not read (before a compact boundary, or a cached prefix) are
// counted here, so it costs nothing more when the load read the whole
// file or had no damaged lines.
func (l *loader) numberLines(src io.ReaderAt) {
	if len(l.lineWarnings) == 0 {
		return
	}
	slices.SortFunc(l.lineWarnings, func(a, b lineWarning) int { return cmp.Compare(a.offset, b.offset) })
	var buf []byte
	var off int64
	line := 1
	// countTo counts the newlines before end into line; false if the
	// file could not be read that far.
	countTo := func(end int64) bool {
		if off < end && buf == nil {
			buf = make([]byte, 64<<10)
		}
		for off < end {
			k, err := src.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
			line += bytes.Count(buf[:k], []byte("\n"))
			off += int64(k)
			if err != nil && k == 0 {
				return false
			}
		}
		return true
	}
	unread := l.base + l.sc.Offset()
	for _, w := range l.lineWarnings {
		var no int
		if w.scanned {
			if !countTo(unread) {
				return
			}
			no = l.sc.Number(jsonl.Line{Newlines: w.newlines}, line-1)
		} else {
			if !countTo(w.offset) {
				return
			}
			no = line
		}
		old := fmt.Sprintf("the line at byte %d", w.offset)
		l.conv.Warnings[w.index] = strings.Replace(l.conv.Warnings[w.index], old, fmt.Sprintf("line %d (byte %d)", no, w.offset), 1)
	}
}

func (l *loader) warnf(format string, args ...any) {
	if l.mute {
		return
	}
	l.conv.Warnings = append(l.conv.Warnings, fmt.Sprintf(format, args...))
}

// HeapOf is about how much memory Load allocates for the transcript in
// src, of size bytes, whose conversation is the whole file (one with a
// compact boundary needs less), with messages kept in the file's mapping
// (LoadOptions.Map). It goes by the lines more than the bytes (the
// entries, their decoded messages and the maps are per line, the text
// stays in the mapping): about heapPerLine a line, the lines counted in
// the file's last heapSample bytes, which the load reads first; at least
// 0.6 of the file and at most four times it.
// Measured with cairn-bench resume -map -cache on bench/gen's 100 MB
// sessions: 62 MB for 32,900 lines, 146 MB for 77,600 (-terse), 0.53 of
// the file at 400 MB.
func HeapOf(src io.ReaderAt, size int64) int64 {
	least := size * 6 / 10
	sample := make([]byte, min(size, heapSample))
	n, err := src.ReadAt(sample, size-int64(len(sample)))
	if n == 0 || (err != nil && err != io.EOF) {
		return least
	}
	lines := int64(bytes.Count(sample[:n], []byte{'\n'})) * size / int64(n)
	// At most four times the file (650-byte lines take 3.7): the end
	// of a file may be denser than the rest, and the heap is grown by
	// this much.
	return min(max(least, lines*heapPerLine), size*4)
}

// heapSample is how much of a transcript's end HeapOf counts lines in, and
// heapPerLine the heap a line takes.
const (
	heapSample  = 256 << 10
	heapPerLine = 1900
)

// entriesHint is about how many entries the given bytes of a transcript
// hold (a line is about 3 KB: 2.7 KB in Claude Code's long sessions, 3.2
// KB in bench/gen's), bounded: the loader's maps are made that large at
// once rather than grown from nothing, rehashing each time.
func entriesHint(bytes int64) int {
	return int(min(bytes/3000, 1<<18))
}

// roomFor is how many more entries to make room for in a map of n, once
// the load reads on (readingOn): about as many as the bytes left to read
// hold, but at most three times n (64 at the least), for a load that
// stops at a compact boundary soon.
func (l *loader) roomFor(n int) int {
	return min(entriesHint(l.readTo), 3*max(n, 64))
}

// withRoom returns m, made again with room for more entries than it holds.
func withRoom[K comparable, V any](m map[K]V, more int) map[K]V {
	out := make(map[K]V, len(m)+more)
	maps.Copy(out, m)
	return out
}

// see adds a line given to the loader to those the cache is given. The
// list is grown to about the number of lines left to give, judged from
// the bytes read so far, and at most to four times its length, rather
// than by a quarter at a time: on a 400 MB file that allocated five times
// the list's final size.
func (l *loader) see(cl cachedLine) {
	if len(l.seen) == cap(l.seen) {
		n := len(l.seen)
		read := l.size - l.sc.Offset()
		more := 0
		if n > 0 && read > 0 {
			more = int(l.sc.Offset() * int64(n) / read)
		}
		// At most four times as long, for lines yet to read (the load may
		// stop at a boundary), and room for the cached prefix's lines
		// still to give, whose number is known.
		more = max(min(more+more/8, 3*n), 64) + l.replayAt + 1
		l.seen = slices.Grow(l.seen, more)
	}
	l.seen = append(l.seen, cl)
}

// drainLimit is how many unread bytes at the start of the file a load
// with a cache reads after it is done, to cache the whole file.
const drainLimit = 1 << 20

// readLine reads and indexes one more line, backwards. It returns false at
// the start of the file.
func (l *loader) readLine() (bool, error) {
	if l.bof {
		return false, nil
	}
	if err := l.ctx.Err(); err != nil {
		return false, err
	}
	if len(l.batch) == 0 {
		ok, err := l.decodeBatch()
		if err != nil {
			return false, err
		}
		if !ok {
			return l.replayLine(), nil
		}
	}
	d := &l.batch[0]
	l.batch = l.batch[1:]
	l.apply(d)
	*d = decoded{} // the batch's array must not keep the entry alive
	return true, nil
}

// decoded is one line of a batch: its entry (nil when the line gave none),
// the warnings decoding it gave, and whether the cache held it; with a
// cache, n and sum stand for its bytes (see lineSum).
type decoded struct {
	line   jsonl.Line
	e      *Entry
	warns  []string
	cached bool
	n      int
	sum    uint64
}

// parallelBatch is the size of a batch of lines worth decoding on more
// than one core.
const parallelBatch = 64 << 10

// decodeBatch makes the next batch read (see takeBatch) the lines readLine
// applies, decoded. Nothing of the loader's state changes until apply
// takes them one by one, in order, so the conversation and its warnings
// are those of decoding the lines one at a time. Once a load has applied
// readAheadAfter bytes, it reads the next blocks before their turn, up to
// a quarter of what it applied (and at most maxAhead blocks), and the
// decoder decodes them on every core while it applies this one: a load
// that read much of a file is most likely reading more of it, and one
// that stops at a compact boundary decodes at most a quarter more than
// it needs. It returns false at the start of the scanned part of the
// file.
func (l *loader) decodeBatch() (bool, error) {
	if l.batchBuf != nil {
		// Nothing is left of the last batch to apply.
		l.freeBatches = append(l.freeBatches, l.batchBuf[:0])
		l.batchBuf = nil
	}
	if len(l.queue) == 0 {
		l.readBatch()
	}
	if applied := l.size - l.readTo; applied >= readAheadAfter && !l.readingOn {
		// The map is made again for what is left, at most four times
		// what it holds (the load may stop at the next compact
		// boundary), rather than grown a step at a time.
		l.readingOn = true
		l.byUUID = withRoom(l.byUUID, l.roomFor(len(l.byUUID)))
	}
	for applied := l.size - l.readTo; applied >= readAheadAfter && !l.eof && len(l.queue) <= maxAhead &&
		l.queue[0].offset-l.sc.Offset() <= applied/4; {
		l.readBatch()
	}
	a := l.queue[0]
	if l.dec != nil {
		l.dec.wait(a, &l.arenas[0])
	}
	l.queue[0] = nil
	l.queue = l.queue[1:]
	l.readTo = a.offset
	if a.block != nil {
		// A block's buffer is read into again once its lines are decoded
		// and the block before it was read (see jsonl.Backward.Buffers).
		if len(l.queue) > 0 {
			l.blocks = append(l.blocks, a.block)
		} else {
			l.held = a.block
		}
	}
	if len(a.scanWarns) > 0 {
		l.scanWarned = true
		for _, w := range a.scanWarns {
			l.warnf("%s", w)
		}
	}
	if a.err != nil || a.batch == nil {
		return false, a.err
	}
	l.batchBuf, l.batch = a.batch, a.batch
	return true, nil
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// readAhead is a batch read: its lines (nil at the start of the file) or
// the error reading them, the warnings the scanner gave reading it, the
// scanner's offset after it, and the buffer its lines are in. todo are
// the lines to decode (those the cache did not hold), size their bytes;
// done is closed once they are decoded, pending counting the decoder's
// jobs still to do.
type readAhead struct {
	batch     []decoded
	err       error
	scanWarns []string
	offset    int64
	block     []byte
	todo      []int
	size      int
	// sum is set when the lines are summed for the cache (see
	// readBatch).
	sum     bool
	pending atomic.Int32
	done    chan struct{}
}

// readAheadAfter is how much of a file a load applies before it reads
// ahead: a chain that ends at a compact boundary is most often shorter,
// and its load then reads nothing it does not need (tests change it:
// raised, the load reads one block at a time).
var readAheadAfter int64 = 1 << 20

// maxAhead bounds how many blocks a load reads ahead of the one it waits
// for.
const maxAhead = 8

// maxLine bounds a line's length (0: jsonl.MaxLineBytes); tests lower it.
var maxLine = 0

// readBatch reads the next batch into the queue and has its lines
// decoded: at once when they are few and the decoder is not running,
// else by the decoder.
func (l *loader) readBatch() {
	var buf []decoded
	if n := len(l.freeBatches); n > 0 {
		buf, l.freeBatches = l.freeBatches[n-1], l.freeBatches[:n-1]
	}
	l.got = l.got[:0]
	r := l.takeBatch(buf)
	if n := len(l.got); n > 0 {
		// The blocks read before the last one held only the start of the
		// line that ends in it, copied out since, and so does the block
		// read last before them (see decodeBatch).
		l.blocks = append(l.blocks, l.got[:n-1]...)
		if l.held != nil {
			l.blocks, l.held = append(l.blocks, l.held), nil
		}
		r.block = l.got[n-1]
	}
	r.offset = l.sc.Offset()
	// The lines of a file read whole end in the cache's prefix, where only
	// the last is ever looked at again (see LineCache.prefixFor), and it
	// is in the first or second read (the last whole line of the file):
	// once the load reads on, its lines are no longer summed as they are
	// decoded; those that end in the cache's map after all are summed
	// from the file then (see cacheLines).
	r.sum = l.cache != nil && !l.readingOn
	l.eof = l.eof || r.batch == nil
	l.queue = append(l.queue, r)
	switch {
	case len(r.todo) == 0:
		r.done = closed
	case l.dec == nil && (r.size < parallelBatch || len(l.arenas) < 2):
		decodeLines(r.batch, r.todo, &l.arenas[0], r.sum, l.file, false)
		r.done = closed
	default:
		if l.dec == nil {
			l.dec = startDecoder(l.arenas[1:], l.file)
		}
		l.dec.decode(r)
	}
}

// block returns a buffer of at least n bytes for the scanner to read a
// block into (see jsonl.Backward.Buffers), one of a block whose lines
// are done with when there is one.
func (l *loader) block(n int) []byte {
	var b []byte
	if i := slices.IndexFunc(l.blocks, func(b []byte) bool { return cap(b) >= n }); i >= 0 {
		b = l.blocks[i][:0]
		l.blocks = slices.Delete(l.blocks, i, i+1)
	} else {
		b = make([]byte, 0, n)
	}
	l.got = append(l.got, b)
	return b
}

// takeBatch reads the next line and those buffered with it into buf (it
// reads a block at a time, so taking them reads nothing more). Only the
// loader's goroutine calls it: it reads the scanner and the cache.
func (l *loader) takeBatch(buf []decoded) *readAhead {
	l.scanWarns = nil
	line, ok, err := l.sc.Next()
	r := &readAhead{scanWarns: l.scanWarns}
	if err != nil {
		r.err = fmt.Errorf("read transcript: %w", err)
		return r
	}
	if !ok {
		return r
	}
	n := 1 + l.sc.Buffered()
	batch := buf
	for i := range n {
		if i > 0 {
			line, _, _ = l.sc.Next() // buffered: no read, no error
		}
		line.Offset += l.base
		d := decoded{line: line}
		if l.cache != nil {
			if cl, ok := l.cache.lookup(line.Offset, line.Bytes); ok && cl.e != nil {
				d.e, d.cached, d.n, d.sum = cl.e, true, int(cl.n), cl.sum
			}
		}
		if !d.cached {
			r.todo = append(r.todo, i)
			r.size += len(line.Bytes)
		}
		batch = append(batch, d)
	}
	r.batch, r.scanWarns = batch, l.scanWarns
	return r
}

// decodeLines decodes the lines idx of batch, taking the entries' bodies
// from a; with sum set, it sums each line for the cache (see lineSum),
// else it marks each unsummed: n -1, and its length for sum (see
// cacheLines).
// With many set (the decoder's jobs: many more lines follow), it decodes
// the messages of user and assistant entries too, while their lines are
// in the core's cache, rather than in a pass of their own over the chain
// (decodeMessages) once the file was read, and has a take whole chunks.
// It touches nothing but those lines and a.
func decodeLines(batch []decoded, idx []int, a *arena, sum bool, file *fileRef, many bool) {
	a.left = 0
	if many {
		a.left = arenaChunk
	}
	for _, i := range idx {
		a.left += len(batch[i].line.Bytes)
	}
	for _, i := range idx {
		d := &batch[i]
		if sum {
			d.n, d.sum = lineSum(d.line.Bytes)
		} else {
			d.n, d.sum = -1, uint64(len(d.line.Bytes))
		}
		e, ok := decodeLine(d.line, a, file, many || a.fmap != nil, func(format string, args ...any) {
			d.warns = append(d.warns, fmt.Sprintf(format, args...))
		})
		a.left -= len(d.line.Bytes)
		if ok {
			d.e = e
			if many && (e.Type == TypeUser || e.Type == TypeAssistant) {
				_, _, _ = e.DecodeMessage()
			}
		}
	}
}

// decoder decodes the lines of batches on goroutines of its own, one per
// arena, and on the loader's while it waits (see wait), which take jobs
// of about jobBytes of lines each, in the order given: the cores stay
// busy however the lines' sizes vary, and the loader, which alone applies
// the lines, never waits for a core.
type decoder struct {
	jobs chan decodeJob
	wg   sync.WaitGroup
	stop atomic.Bool
	file *fileRef
}

// decodeJob is some lines of a batch, to decode.
type decodeJob struct {
	r   *readAhead
	idx []int
}

// jobBytes is about how many bytes of lines one job of the decoder holds.
const jobBytes = 32 << 10

// maxJobs is the room for jobs not yet taken: more than the batches
// read ahead usually hold, so that the loader seldom waits to give one.
const maxJobs = 256

func startDecoder(arenas []arena, file *fileRef) *decoder {
	d := &decoder{jobs: make(chan decodeJob, maxJobs), file: file}
	for i := range arenas {
		a := &arenas[i]
		d.wg.Go(func() {
			for j := range d.jobs {
				d.run(j, a)
			}
		})
	}
	return d
}

func (d *decoder) run(j decodeJob, a *arena) {
	if !d.stop.Load() {
		decodeLines(j.r.batch, j.idx, a, j.r.sum, d.file, true)
	}
	if j.r.pending.Add(-1) == 0 {
		close(j.r.done)
	}
}

// wait returns once r is decoded, doing the jobs next in line meanwhile
// with the arena a.
func (d *decoder) wait(r *readAhead, a *arena) {
	for {
		select {
		case <-r.done:
			return
		case j := <-d.jobs:
			d.run(j, a)
		}
	}
}

// decode has the lines r.todo decoded; r.done is closed then.
func (d *decoder) decode(r *readAhead) {
	r.done = make(chan struct{})
	var jobs [][2]int // of r.todo
	for start, k, n := 0, 0, 0; k < len(r.todo); k++ {
		n += len(r.batch[r.todo[k]].line.Bytes)
		if n >= jobBytes || k == len(r.todo)-1 {
			jobs = append(jobs, [2]int{start, k + 1})
			start, n = k+1, 0
		}
	}
	r.pending.Store(int32(len(jobs)))
	for _, j := range jobs {
		d.jobs <- decodeJob{r, r.todo[j[0]:j[1]]}
	}
}

// close stops the decoder's goroutines, the jobs left undone: the load
// is done with what they would decode.
func (d *decoder) close() {
	d.stop.Store(true)
	close(d.jobs)
	d.wg.Wait()
}

// apply gives the loader one decoded line, as reading it would have.
func (l *loader) apply(d *decoded) {
	line := d.line
	l.appliedAt = line.Offset
	if line.Torn {
		l.tornAt = line.Offset
	}
	l.rawFrom = line.Offset
	if l.raw != nil && d.e != nil && l.raw[d.e.Type] {
		// The line's block is not read into again before the batch is
		// applied (see decodeBatch), but it is after.
		l.conv.Raw = append(l.conv.Raw, RawLine{Offset: line.Offset, Bytes: bytes.Clone(line.Bytes)})
	}
	if d.cached {
		l.see(cachedLine{off: line.Offset, e: d.e, n: int32(d.n), sum: d.sum})
		l.index(d.e)
		return
	}
	for _, w := range d.warns {
		if line.No == 0 && !l.mute {
			l.lineWarnings = append(l.lineWarnings, lineWarning{index: len(l.conv.Warnings), offset: line.Offset, scanned: true, newlines: line.Newlines})
		}
		l.warnf("%s", w)
	}
	if l.cache != nil {
		// Given to the cache once the load is done (see finish).
		cl := cachedLine{off: line.Offset, n: int32(d.n), sum: d.sum}
		if d.warns != nil {
			warns := d.warns // d is the batch's, used again
			cl.warns = &warns
		}
		if d.e != nil {
			cl.e = recordOf(d.e)
		}
		l.see(cl)
	}
	if d.e != nil {
		l.index(d.e)
	}
}

// replayLine gives the loader the next line of the cached prefix, as
// reading it would have: its entry, or its warnings again. It returns
// false, and marks the start of the file reached, when none is left.
func (l *loader) replayLine() bool {
	if l.replayAt < 0 {
		l.bof = true
		return false
	}
	cl := l.replay[l.replayAt]
	l.replayAt--
	l.appliedAt = cl.off
	l.see(cl)
	var warns []string
	if cl.warns != nil {
		warns = *cl.warns
	}
	for _, w := range warns {
		if !l.mute {
			l.lineWarnings = append(l.lineWarnings, lineWarning{index: len(l.conv.Warnings), offset: cl.off})
		}
		l.warnf("%s", w)
	}
	if cl.e != nil {
		l.index(cl.e)
	}
	return true
}

// decodeLine turns a raw line into an entry whose body is taken from a,
// reporting why it cannot. With file set, the entry may leave its
// toolUseResult there; with eager, it decodes its message too (see
// decodeEntry). With a.records set, a line the loader reads only the type
// of (see recordOnly) gives the shared entry of its type, when it has one
// (sideRecords).
func decodeLine(line jsonl.Line, a *arena, file *fileRef, eager bool, warn func(string, ...any)) (*Entry, bool) {
	b, base := line.Bytes, line.Offset
	if line.Cut {
		badLine(line, errUnclosed, warn)
		return nil, false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	if i := bytes.IndexByte(b, 0); i >= 0 { // IndexByte is the fast one
		i += bytes.LastIndexByte(b[i:], 0)
		// A crash can leave a run of zero bytes where a write was lost;
		// what follows the zeros may still be a whole entry.
		warn("%s: %d bytes of null bytes and damaged data skipped", line.Where(), i+1)
		b, base = b[i+1:], base+int64(i+1)
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, false
		}
	}
	if !closesObject(b) && opensObject(b) {
		// A line cut short, or run into by another write: found out
		// here at once rather than at the end of decoding it.
		badLine(line, errUnclosed, warn)
		return nil, false
	}
	e, err := decodeEntry(b, a, file, base, eager)
	if err != nil {
		badLine(line, err, warn)
		return nil, false
	}
	if a != nil && a.records && recordOnly(&e) {
		// The shared record of its type, looked up here rather than with
		// recordOf, which would have e escape to the heap for every line.
		if r, ok := sideRecords[e.Type]; ok {
			return r, true // no caller changes an entry
		}
	}
	p := new(Entry) // not &e: that would allocate e for the records too
	*p = e
	p.offset = line.Offset
	return p, true
}

// errUnclosed is why a line that does not end as a JSON object does is
// not an entry.
var errUnclosed = errors.New("it does not end with '}'")

// badLine warns that line, which is not an entry for the reason err, is
// skipped.
func badLine(line jsonl.Line, err error, warn func(string, ...any)) {
	if line.Torn {
		warn("%s: incomplete last line (a write was cut short), skipped", line.Where())
	} else {
		warn("%s: not a valid entry (%v), skipped", line.Where(), err)
	}
}

// opensObject and closesObject report whether b, but for white space,
// starts and ends as a JSON object does.
func opensObject(b []byte) bool {
	b = bytes.TrimLeft(b, jsonSpace)
	return len(b) > 0 && b[0] == '{'
}

func closesObject(b []byte) bool {
	b = bytes.TrimRight(b, jsonSpace)
	return len(b) > 0 && b[len(b)-1] == '}'
}

const jsonSpace = " \t\r\n"

func (l *loader) index(e *Entry) {
	switch {
	case e.Type == TypeLastPrompt:
		if l.lastPromptLeaf == "" && e.LeafUUID != "" {
			l.lastPromptLeaf = e.LeafUUID
			l.promptNewer = l.newestChain == nil && l.newestSide == nil
		}
		if l.conv.LastPrompt == "" && !l.mute {
			// Lines read past the conversation to fill the cache change
			// nothing in it: a load without the cache does not read them.
			l.conv.LastPrompt = e.LastPrompt
		}
		return
	case e.Type == TypeCustomTitle:
		if l.conv.CustomTitle == "" && !l.mute {
			l.conv.CustomTitle = e.CustomTitle
		}
		return
	case !e.IsChain():
		if !KnownLineType(e.Type) && l.unknownType == "" {
			l.unknownType = e.Type
			l.warnf("lines of type %q are not known to cairn (written by a newer Claude Code?): they stay in the file and out of the conversation", e.Type)
		}
		return
	}
	if l.conv.SessionID == "" && !l.mute {
		l.conv.SessionID = e.SessionID
	}
	if _, dup := l.byUUID[e.UUID]; dup {
		// Read backwards, so the copy already held is the later one, which
		// is the one that counts.
		return
	}
	l.byUUID[e.UUID] = e
	l.order = append(l.order, e)
	switch {
	case l.newestChain == nil && !e.IsSidechain:
		l.newestChain = e
	case l.newestSide == nil && e.IsSidechain:
		l.newestSide = e
	}
	if len(e.SnipMetadata) > 0 {
		// Claude Code recognises a snip by its removedUuids, whatever the
		// entry's subtype.
		var sm struct {
			RemovedUUIDs []string `json:"removedUuids"`
		}
		if err := json.Unmarshal(e.SnipMetadata, &sm); err != nil {
			l.warnf("snip record %s: %v; ignored", e.UUID, err)
		}
		for _, id := range sm.RemovedUUIDs {
			l.removed[id] = true
		}
	}
	if e.IsCompactBoundary() {
		l.indexBoundary(e)
	}
}

func (l *loader) indexBoundary(e *Entry) {
	md, err := e.DecodeCompactMetadata()
	if err != nil {
		l.warnf("compact boundary %s: %v; its preserved messages are not restored", e.UUID, err)
		return
	}
	bi := &boundaryInfo{entry: e}
	if pm := md.PreservedMessages; pm != nil && pm.AnchorUUID != "" && len(pm.UUIDs) > 0 {
		bi.anchor, bi.list = pm.AnchorUUID, pm.UUIDs
		bi.head, bi.tail = pm.UUIDs[0], pm.UUIDs[len(pm.UUIDs)-1]
	} else if seg := md.PreservedSegment; seg != nil && seg.AnchorUUID != "" && seg.HeadUUID != "" && seg.TailUUID != "" {
		bi.anchor, bi.head, bi.tail = seg.AnchorUUID, seg.HeadUUID, seg.TailUUID
	} else {
		return
	}
	if _, seen := l.byAnchor[bi.anchor]; seen {
		return // a later boundary with the same anchor was read first
	}
	l.byAnchor[bi.anchor] = bi
	for _, id := range append([]string{bi.head}, bi.list...) {
		l.byPreserved[id] = bi
	}
}

// get returns the entry with uuid, reading further back until it is found
// or the file is exhausted.
func (l *loader) get(uuid string) (*Entry, error) {
	for {
		if e, ok := l.byUUID[uuid]; ok {
			return e, nil
		}
		more, err := l.readLine()
		if err != nil || !more {
			return nil, err
		}
	}
}

// absent reports whether none of the lines the load has yet to apply can
// be the entry with uuid: its text is nowhere in the bytes before the
// last line applied (read a block at a time from there back, nothing
// decoded), nor the uuid of an entry of the cached prefix still to
// replay. A last-prompt record naming a line a crash never wrote is so
// found out for what it is by a search of the file, not by decoding all
// of it (and filling the cache with it); one naming an earlier line (a
// rewind) is most often found in the first block searched. It reports
// false when it cannot tell: a uuid of other bytes than letters, digits
// and dashes (which a line could write escaped), or a file it cannot
// read; the load then looks for the line by decoding, as before. It
// assumes a line's uuid is written as its bytes are, as Claude Code's
// and cairn's writers write them.
func (l *loader) absent(uuid string) bool {
	if _, ok := l.byUUID[uuid]; ok {
		return false
	}
	for i := range len(uuid) {
		if c := uuid[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	for _, cl := range l.replay[:l.replayAt+1] {
		if cl.e != nil && cl.e.UUID == uuid {
			return false
		}
	}
	end := min(l.appliedAt-l.base, l.size)
	if end <= 0 {
		return true
	}
	// The uuid as a JSON string: a line naming it in any field holds it.
	pat := make([]byte, 0, len(uuid)+2)
	pat = append(append(append(pat, '"'), uuid...), '"')
	buf := make([]byte, min(end, 1<<20))
	find := jsonl.NewFinder(pat)
	for hi := end; ; {
		lo := max(0, hi-int64(len(buf)))
		if k, _ := l.scanned.ReadAt(buf[:hi-lo], lo); int64(k) < hi-lo {
			return false // the load reads it and says why
		}
		if find.In(buf[:hi-lo]) {
			return false
		}
		if lo == 0 {
			break
		}
		hi = lo + int64(len(pat)-1) // a pattern cut by the block's start
	}
	return true
}

// findLeaf decides where the conversation ends: an explicit leaf, else the
// newest last-prompt record's leaf when nothing was appended after it, else
// the newest main-chain line (a turn cut short by a crash still counts),
// else, in a subagent's transcript, the newest sidechain line.
func (l *loader) findLeaf(explicit string) error {
	for l.newestChain == nil {
		more, err := l.readLine()
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	want := explicit
	if want == "" && l.promptNewer {
		want = l.lastPromptLeaf
	}
	if want != "" {
		var e *Entry
		var err error
		if explicit != "" || !l.absent(want) {
			e, err = l.get(want)
		}
		if err != nil {
			return err
		}
		if e != nil {
			l.leaf = e
			return nil
		}
		if explicit != "" {
			return fmt.Errorf("no message %q in this session", explicit)
		}
		// A last-prompt record naming a line the file lacks is what a
		// crash leaves: Claude Code may write the record before the
		// response it names. Its resume starts at the newest message
		// without a word, and so does this one (the torn or missing
		// line, if any, has its own warning).
	}
	l.leaf = l.newestChain
	if l.leaf == nil {
		// A subagent's transcript: every line is a sidechain.
		l.leaf = l.newestSide
	}
	return nil
}

// parentOf returns the uuid the walk goes to after e: its parent, with
// compact boundaries' preserved messages spliced in.
func (l *loader) parentOf(e *Entry) (string, error) {
	if l.history {
		if e.IsCompactBoundary() {
			return e.LogicalParentUUID, nil
		}
		return e.ParentUUID, nil
	}
	if bi := l.byPreserved[e.UUID]; bi != nil {
		ok, err := l.segmentWhole(bi)
		if err != nil {
			return "", err
		}
		if ok {
			if e.UUID == bi.head {
				return bi.anchor, nil // the segment hangs off the summary
			}
			if i := slices.Index(bi.list, e.UUID); i > 0 {
				return bi.list[i-1], nil
			}
		}
	}
	p := e.ParentUUID
	if p == "" {
		return "", nil
	}
	pe, err := l.get(p)
	if err != nil || pe == nil {
		return p, err
	}
	if pe.ParentUUID != "" && l.byAnchor[p] == nil {
		// The boundary that may name pe as its anchor sits before it: just
		// before, or (an auto-compaction in the middle of a turn, Claude
		// Code 2.1.332) a few attachment lines before the summary.
		if err := l.readToBoundary(pe); err != nil {
			return "", err
		}
	}
	if bi := l.byAnchor[p]; bi != nil && l.byPreserved[e.UUID] != bi {
		ok, err := l.segmentWhole(bi)
		if err != nil {
			return "", err
		}
		if ok {
			// What followed the summary continues from the preserved tail.
			return bi.tail, nil
		}
	}
	return p, nil
}

// readToBoundary reads the lines before pe until the compact boundary
// that may name pe as its anchor is indexed: pe's parent, or, when pe is a
// compaction summary, the boundary its parents lead back to over the
// attachments written between the two.
func (l *loader) readToBoundary(pe *Entry) error {
	e := pe
	for range maxSummaryLead {
		if e.ParentUUID == "" {
			return nil
		}
		parent, err := l.get(e.ParentUUID)
		if err != nil || parent == nil || !pe.IsCompactSummary || parent.Type != TypeAttachment {
			return err // read as far as the boundary (a system line)
		}
		e = parent
	}
	return nil
}

// maxSummaryLead bounds how many attachment lines between a compact
// boundary and its summary readToBoundary follows.
const maxSummaryLead = 64

// segmentWhole reports whether a boundary's preserved messages are all in
// the file (following parents from tail to head when the boundary does not
// list them). Claude Code applies the splice only then; so does cairn.
func (l *loader) segmentWhole(bi *boundaryInfo) (bool, error) {
	if bi.checked || bi.broken {
		return bi.checked, nil
	}
	fail := func(why string) (bool, error) {
		bi.broken = true
		l.warnf("compact boundary %s: %s; the messages it preserved are left out", bi.entry.UUID, why)
		return false, nil
	}
	if anchor, err := l.get(bi.anchor); err != nil {
		return false, err
	} else if anchor == nil {
		// The compaction was cut short before its summary was written:
		// nothing hangs off it, and its preserved messages stay where they
		// are, in the conversation before it.
		bi.broken = true
		return false, nil
	}
	if bi.list != nil {
		for _, id := range bi.list {
			e, err := l.get(id)
			if err != nil {
				return false, err
			}
			if e == nil {
				return fail(fmt.Sprintf("preserved message %s is not in the file", id))
			}
		}
		bi.checked = true
		return true, nil
	}
	seen := make(map[string]bool)
	for id := bi.tail; ; {
		if seen[id] {
			return fail("its preserved messages form a loop")
		}
		seen[id] = true
		e, err := l.get(id)
		if err != nil {
			return false, err
		}
		if e == nil {
			return fail(fmt.Sprintf("preserved message %s is not in the file", id))
		}
		if id == bi.head {
			break
		}
		if e.ParentUUID == "" {
			return fail("its preserved messages do not lead back to their head")
		}
		id = e.ParentUUID
	}
	for id := range seen {
		l.byPreserved[id] = bi
	}
	bi.checked = true
	return true, nil
}

// walk follows parents from the leaf to the root or compact boundary.
func (l *loader) walk() error {
	// Room for what the load read, and for the cached prefix's lines it
	// will replay (see decodeBatch for a load that reads on).
	room := len(l.order) + l.replayAt + 1
	grown := l.readingOn
	if grown {
		room += l.roomFor(room)
	}
	l.inChain = make(map[string]bool, room)
	e := l.leaf
	if e.IsCompactBoundary() && e.LogicalParentUUID != "" && !l.history {
		// A compaction cut short after its boundary (the summary line
		// lost): the conversation is still the one before it.
		if before, err := l.get(e.LogicalParentUUID); err != nil {
			return err
		} else if before != nil {
			l.warnf("compact boundary %s has no summary after it; resuming from before that compaction", e.UUID)
			e, l.leaf = before, before
		}
	}
	if !l.history && e.ParentUUID != "" {
		// A session that stopped right after a compaction ends at the
		// summary. Its preserved messages now hang off the summary, so the
		// conversation ends at the last of them, as Claude Code resumes it.
		if _, err := l.get(e.ParentUUID); err != nil {
			return err
		}
		if bi := l.byAnchor[e.UUID]; bi != nil {
			ok, err := l.segmentWhole(bi)
			if err != nil {
				return err
			}
			if ok {
				if tail, err := l.get(bi.tail); err == nil && tail != nil {
					e, l.leaf = tail, tail
				}
			}
		}
	}
	for e != nil {
		if l.inChain[e.UUID] {
			l.warnf("entry %s: its parents form a loop; the conversation starts after it", e.UUID)
			break
		}
		if l.readingOn && !grown {
			// The set is made once for the chain the walk most likely
			// reads.
			grown = true
			l.inChain = withRoom(l.inChain, l.roomFor(len(l.inChain)))
		}
		l.inChain[e.UUID] = true
		if !l.removed[e.UUID] || l.history {
			// Scroll-back keeps what was snipped; the model does not see it.
			l.chain = append(l.chain, e)
		}
		if e.IsCompactBoundary() && !l.history {
			break
		}
		p, err := l.parentOf(e)
		if err != nil {
			return err
		}
		if p == "" {
			break
		}
		next, err := l.get(p)
		if err != nil {
			return err
		}
		if next == nil {
			l.warnf("entry %s: parent %s is not in the file; the conversation starts at %s", e.UUID, p, e.UUID)
			break
		}
		e = next
	}
	slices.Reverse(l.chain)
	l.conv.Leaf = l.leaf.UUID
	return nil
}

// reattach puts back the entries Claude Code writes off the chain for one
// response: other content lines of the same message (siblings), and the
// results of parallel tool calls, each of which hangs off its own tool_use
// line. Like Claude Code, it inserts them after the response's last line on
// the chain: siblings first, then results, each in file order.
func (l *loader) reattach() {
	// Which entries are off the chain is looked up on every core (the
	// maps are only read), as the entries are copied out at the end.
	off := make([]bool, len(l.order))
	inParts(len(l.order), parallelEntries, func(lo, hi int) {
		for i, e := range l.order[lo:hi] {
			off[lo+i] = e.ParentUUID != "" && !l.inChain[e.UUID] && !l.removed[e.UUID] && e.IsSidechain == l.leaf.IsSidechain
		}
	})
	children := make(map[string][]*Entry)
	for i := len(l.order) - 1; i >= 0; i-- { // oldest first
		if e := l.order[i]; off[i] {
			children[e.ParentUUID] = append(children[e.ParentUUID], e)
		}
	}
	ids := make([]string, len(l.chain))
	for i, e := range l.chain {
		if e.Type == TypeAssistant {
			ids[i] = messageID(e)
		}
	}
	order := make([]*Entry, 0, len(l.chain))
	for i, e := range l.chain {
		order = append(order, e)
		if e.Type != TypeAssistant || (ids[i] != "" && i+1 < len(l.chain) && ids[i+1] == ids[i]) {
			continue // not the last line of a response
		}
		start := i
		for ids[i] != "" && start > 0 && ids[start-1] == ids[i] {
			start--
		}
		var members, siblings, results []*Entry
		for j := start; j <= i; j++ {
			members = append(members, l.chain[j])
		}
		for k := 0; k < len(members); k++ {
			for _, c := range children[members[k].UUID] {
				switch {
				case l.inChain[c.UUID]:
				case c.Type == TypeAssistant && ids[i] != "" && messageID(c) == ids[i]:
					l.inChain[c.UUID] = true
					siblings = append(siblings, c)
					members = append(members, c)
				case isToolResultEntry(c):
					l.inChain[c.UUID] = true
					results = append(results, c)
				}
			}
		}
		byOffset := func(a, b *Entry) int { return cmp.Compare(a.offset, b.offset) }
		slices.SortStableFunc(siblings, byOffset)
		slices.SortStableFunc(results, byOffset)
		order = append(append(order, siblings...), results...)
	}
	l.conv.Entries = order
}

// inParts calls f on parts of [0, n), one per core at once when n is
// atLeast or more, else on the whole.
func inParts(n, atLeast int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || n < max(atLeast, 2) {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { f(n*w/workers, n*(w+1)/workers) })
	}
	wg.Wait()
}

// parallelEntries is how many entries are worth going over on more than
// one core.
const parallelEntries = 4096

// decodeMessages decodes the messages of chain, on every core when they
// are many: reattach looks into the responses' messages and Messages into
// all of them, and each entry keeps what was decoded.
func decodeMessages(chain []*Entry) {
	workers := runtime.GOMAXPROCS(0)
	size := 0
	for _, e := range chain {
		size += len(e.Message)
	}
	if workers < 2 || size < parallelBatch {
		return // decoded when first asked for
	}
	inParts(len(chain), 0, func(lo, hi int) {
		for _, e := range chain[lo:hi] {
			_, _, _ = e.DecodeMessage()
		}
	})
}

// messageID returns an entry's message.id.
func messageID(e *Entry) string {
	m, ok, err := e.DecodeMessage()
	if !ok || err != nil {
		return ""
	}
	return m.ID
}

// isToolResultEntry reports whether e is a user entry carrying tool results.
func isToolResultEntry(e *Entry) bool {
	if e.Type != TypeUser {
		return false
	}
	m, ok, err := e.DecodeMessage()
	if !ok || err != nil {
		return false
	}
	return len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult
}
