package transcript

import (
	"bytes"
	"sync"
)

// LineCache keeps the entries Load decoded from one transcript file, by
// the offset their line starts at, so that loading the file again after
// lines were appended to it decodes only the new ones: a session reading
// its own transcript back costs the bytes it added, not the whole file
// again. A cached entry is used only for a line whose bytes are still the
// ones it was decoded from; lines that were damaged or repaired (a warning
// named them) are decoded again each time, so their warnings repeat. The
// zero value is ready to use and safe for concurrent use. A cache serves
// one file: give another file its own.
type LineCache struct {
	mu sync.Mutex
	m  map[int64]*Entry
}

// lookup returns the entry decoded from line at off, if its bytes match.
func (c *LineCache) lookup(off int64, line []byte) *Entry {
	c.mu.Lock()
	e := c.m[off]
	c.mu.Unlock()
	if e == nil || !bytes.Equal(e.raw, bytes.TrimSpace(line)) {
		return nil
	}
	return e
}

func (c *LineCache) store(off int64, e *Entry) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[int64]*Entry)
	}
	c.m[off] = e
	c.mu.Unlock()
}
