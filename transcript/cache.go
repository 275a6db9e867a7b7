package transcript

import (
	"bytes"
	"hash/maphash"
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
}

// cachedLine is what one line gave the loader: an entry, or the warnings
// that said why it was skipped; n and sum are the length and hash of the
// line (see lineSum), which stand for its bytes.
type cachedLine struct {
	off   int64
	e     *Entry
	warns []string
	n     int
	sum   uint64
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
	}
	c.mu.Unlock()
}

// prefixFor returns the cached prefix and its lines when they still
// describe src: the same file (when src can say), at least as long, and
// the prefix's last line still there byte for byte.
func (c *LineCache) prefixFor(src Source) (int64, []cachedLine) {
	c.check(src)
	c.mu.Lock()
	prefix, lines := c.prefix, c.lines
	c.mu.Unlock()
	if prefix == 0 || len(lines) == 0 || src.Size() < prefix {
		return 0, nil
	}
	last := lines[len(lines)-1]
	buf := make([]byte, prefix-last.off)
	if n, err := src.ReadAt(buf, last.off); n != len(buf) && err != nil {
		return 0, nil
	}
	if buf[len(buf)-1] != '\n' {
		return 0, nil
	}
	if n, sum := lineSum(buf); last.e != nil && (n != last.n || sum != last.sum) {
		return 0, nil
	}
	return prefix, lines
}

// setPrefix records that the first prefix bytes of the file are the lines
// given, in file order. Their entries leave the map: the next load
// takes them from lines.
func (c *LineCache) setPrefix(prefix int64, lines []cachedLine) {
	c.mu.Lock()
	c.prefix, c.lines = prefix, lines
	for off := range c.m {
		if off < prefix {
			delete(c.m, off)
		}
	}
	c.mu.Unlock()
}

// lookup returns what the line at off gave when it was decoded, if its
// length and hash match line's.
func (c *LineCache) lookup(off int64, line []byte) (cachedLine, bool) {
	c.mu.Lock()
	cl, ok := c.m[off]
	c.mu.Unlock()
	if !ok || cl.n != len(bytes.TrimSpace(line)) {
		return cachedLine{}, false
	}
	if _, sum := lineSum(line); sum != cl.sum {
		return cachedLine{}, false
	}
	return cl, true
}

func (c *LineCache) store(cl cachedLine) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[int64]cachedLine)
	}
	c.m[cl.off] = cl
	c.mu.Unlock()
}
