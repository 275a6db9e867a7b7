package transcript

import (
	"bytes"
	"hash/maphash"
	"strings"
	"sync"
)

// LineCache keeps the entries Load decoded from one transcript file, by
// the offset their line starts at, so that loading the file again after
// lines were appended to it decodes only the new ones: a session reading
// its own transcript back costs the bytes it added, not the whole file
// again. A cached entry is used only for a line whose bytes are still the
// ones it was decoded from: the cache keeps no line, only its length and
// 64-bit hash (hash/maphash, seeded per process), and a line of the same
// length and hash counts as the same (two different lines pass for one
// with a chance of 2⁻⁶⁴). Lines that were damaged or repaired (a warning
// named them) are decoded again each time, so their warnings repeat. The
// zero value is ready to use and safe for concurrent use. A cache serves
// one file: give another file its own; when the file at its path is
// replaced by another (a different device and inode), the cache forgets
// what it held.
//
// The cache holds no entry of its own for a line a load put in its
// conversation: it keeps the same *Entry as Conversation.Entries (see
// Conversation.Entries: no caller changes one in place). Of a line that is
// no part of the chain (progress, queue operations, last-prompt records) it
// keeps only what the loader reads of it; a chain line the conversation
// left out (a side branch, a snipped message) keeps the entry it was
// decoded into.
type LineCache struct {
	mu sync.Mutex
	// id names the file the entries were read from (see Identified); ""
	// when its source cannot name it.
	id string
	// m holds the entries of lines after the prefix, by offset; the
	// prefix's own entries are in lines only.
	m map[int64]cachedLine
	// prefix is how much of the file, from its start, a load read line by
	// line with nothing the scanner itself skipped; lines holds what each
	// of those lines gave, in file order. The next load reads only the
	// bytes after it and takes the rest from lines: a transcript is only
	// ever appended to. 0 when no load read the whole file.
	prefix int64
	lines  []cachedLine
	// gen counts the times the cache was emptied (Forget, or another
	// file in its place): a load that took it before leaves nothing in it
	// (it read what the cache was told to let go of, or another file).
	gen uint64
}

// cachedLine is what one line gave the loader: an entry (for a line off
// the chain, its record: see recordOf), or the warnings that said why it
// was skipped.
type cachedLine struct {
	off int64
	e   *Entry
	// warns is nil but for the few lines that gave warnings: a line
	// cached is a few words, for each line of the file.
	warns *[]string
	// n and sum are the length and hash of the line (lineSum), which
	// stand for its bytes. A line read after the load stopped summing
	// has n -1 and its raw length in sum, for sumAgain to read it by; it
	// is never matched.
	sum uint64
	n   int32 // a line is at most jsonl.MaxLineBytes
}

// lineSum returns the length and hash of a line, white space around it
// left out.
func lineSum(line []byte) (int, uint64) {
	line = bytes.TrimSpace(line)
	return len(line), maphash.Bytes(hashSeed, line)
}

// Identified is implemented by sources that can name the file they read:
// two sources with the same identity read the same file (for a file, its
// device and inode), so a file put in another's place is not mistaken
// for it grown.
type Identified interface {
	Identity() string
}

// identityOf returns src's identity, "" when it has none.
func identityOf(src Source) string {
	if s, ok := src.(Identified); ok {
		return s.Identity()
	}
	return ""
}

// check empties the cache when src is not the file it was filled from.
func (c *LineCache) check(src Source) {
	id := identityOf(src)
	c.mu.Lock()
	if id != c.id {
		c.id, c.m, c.prefix, c.lines = id, nil, 0, nil
		c.gen++ // a load of the other file leaves nothing here
	}
	c.mu.Unlock()
}

// prefixFor returns the cached prefix and its lines when they still
// describe src: the same file (when src can say), at least as long, and
// the prefix's last line still there byte for byte.
// It also returns the cache's generation, for the load to give record
// and store.
func (c *LineCache) prefixFor(src Source) (int64, []cachedLine, uint64) {
	c.check(src)
	c.mu.Lock()
	prefix, lines, gen := c.prefix, c.lines, c.gen
	c.mu.Unlock()
	if prefix == 0 || len(lines) == 0 || src.Size() < prefix {
		return 0, nil, gen
	}
	last := lines[len(lines)-1]
	buf := make([]byte, prefix-last.off)
	if n, err := src.ReadAt(buf, last.off); n != len(buf) && err != nil {
		return 0, nil, gen
	}
	if buf[len(buf)-1] != '\n' {
		return 0, nil, gen
	}
	if n, sum := lineSum(buf); last.e != nil && (n != int(last.n) || sum != last.sum) {
		return 0, nil, gen
	}
	return prefix, lines, gen
}

// record records what a load that read the file leaves in the cache:
// with lines set, that the first prefix bytes of the file are those
// lines, in file order, whose entries then leave the map (the next load
// takes them from lines), which is made anew to fit what is left in it.
// A chain line's entry is the one the load's Conversation.Entries holds
// (the same *Entry), so the cache keeps nothing of its own for it.
func (c *LineCache) record(prefix int64, lines []cachedLine, gen uint64) {
	if lines == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return // forgotten since the load took the cache
	}
	thinRecords(lines)
	c.prefix, c.lines = prefix, lines
	var m map[int64]cachedLine
	for off, cl := range c.m {
		if off >= prefix {
			if m == nil {
				m = make(map[int64]cachedLine)
			}
			m[off] = cl
		}
	}
	c.m = m
}

// Forget drops every line the cache holds: for a session compacting its
// conversation, whose loads will read back only to the compact boundary
// it writes (and the few messages before it that the boundary keeps), so
// the entries of a long conversation need not stay in memory through the
// compaction and after it. The next load reads the file back to where it
// stops, and fills the cache again. A load under way when Forget is
// called leaves nothing in the cache (see gen).
func (c *LineCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.prefix, c.lines = nil, 0, nil
	c.gen++
}

// thinRecords keeps of a prefix's last-prompt records and titles only
// those a load can take: it gives the prefix's lines newest first, and
// the first record with a leaf, with a text, the first title with a name,
// are the ones that count (see loader.index). The others keep their type
// alone.
func thinRecords(lines []cachedLine) {
	leaf, text, title := false, false, false
	for i := len(lines) - 1; i >= 0; i-- {
		switch e := lines[i].e; {
		case e == nil:
		case e.Type == TypeLastPrompt:
			if (leaf || e.LeafUUID == "") && (text || e.LastPrompt == "") {
				lines[i].e = sideRecords[TypeLastPrompt]
			}
			leaf, text = leaf || e.LeafUUID != "", text || e.LastPrompt != ""
		case e.Type == TypeCustomTitle:
			if title {
				lines[i].e = sideRecords[TypeCustomTitle]
			}
			title = title || e.CustomTitle != ""
		}
	}
}

// sideRecords are what recordOf keeps of the lines off the chain that
// the loader reads nothing of but their type.
var sideRecords = func() map[string]*Entry {
	m := make(map[string]*Entry)
	for _, typ := range []string{TypeUser, TypeAssistant, TypeAttachment, TypeSystem} {
		m[typ] = &Entry{Type: typ}
	}
	for typ := range sideRecordTypes {
		m[typ] = &Entry{Type: typ}
	}
	return m
}()

// recordOf returns what the cache keeps of e: e itself when it is a chain
// entry or a line the loader read only the type of (decodeLine made it
// that already: a shared record, or its type alone), else an entry
// holding only what the loader reads of a line off the chain (a
// last-prompt record's leaf and text, a title), of its own, so that e's
// body need not stay.
func recordOf(e *Entry) *Entry {
	switch {
	case e.IsChain(), recordOnly(e):
		return e
	case e.Type == TypeLastPrompt:
		return &Entry{Type: TypeLastPrompt, LeafUUID: strings.Clone(e.LeafUUID), LastPrompt: strings.Clone(e.LastPrompt)}
	default: // a custom title, the one type recordOnly leaves
		return &Entry{Type: TypeCustomTitle, CustomTitle: strings.Clone(e.CustomTitle)}
	}
}

// lookup returns what the line at off gave when it was decoded, if its
// length and hash match line's.
func (c *LineCache) lookup(off int64, line []byte) (cachedLine, bool) {
	c.mu.Lock()
	cl, ok := c.m[off]
	c.mu.Unlock()
	if !ok || int(cl.n) != len(bytes.TrimSpace(line)) {
		return cachedLine{}, false
	}
	if _, sum := lineSum(line); sum != cl.sum {
		return cachedLine{}, false
	}
	return cl, true
}

// store keeps cl, which a load that took the cache at generation gen
// read, unless the cache forgot since.
func (c *LineCache) store(cl cachedLine, gen uint64) {
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	if c.m == nil {
		c.m = make(map[int64]cachedLine)
	}
	c.m[cl.off] = cl
	c.mu.Unlock()
}
