package agent

import (
	"bytes"
	"context"
	"sync"

	"github.com/cairn-dev/cairn/transcript"
)

// liveChain keeps the active chain of the session's transcript as it was
// last read back (or loaded by the resume), with the file and the length
// of it that chain describes, so that reading it back after lines that
// only carry the chain on were appended decodes those lines alone: the
// Snip tool's reads of the transcript cost what was written since, not the
// whole file again. Whatever else the appended lines do (a rewind, a
// compaction, a snip, a line another process wrote off the chain's end)
// makes the reader load the file again. The zero value keeps nothing; it
// is safe for concurrent use.
type liveChain struct {
	mu sync.Mutex
	// id is the identity of the file (transcript.Identified), size how
	// much of it entries describe; size is 0 when nothing is kept.
	id   string
	size int64
	// entries is the chain, shared with the Conversation it came from:
	// never changed in place, only appended to past its length.
	entries []transcript.Entry
	// uuids holds the uuids of entries, made when lines are first
	// appended to them.
	uuids map[string]bool
}

// keep records that the first size bytes of the file src reads make the
// chain entries.
func (c *liveChain) keep(src transcript.Source, size int64, entries []transcript.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.size, c.entries, c.uuids = identityOf(src), size, entries, nil
}

// keepLoaded keeps the chain of conv, which a load of the first size
// bytes of src gave, when conv holds nothing the file does not (repairs)
// and the load warned of nothing (a torn last line, which later bytes may
// complete, is read again); else c forgets what it kept.
func (c *liveChain) keepLoaded(src transcript.Source, size int64, conv *transcript.Conversation) {
	if conv.Repaired > 0 || len(conv.Warnings) > 0 {
		c.forget()
		return
	}
	c.keep(src, size, conv.Entries)
}

// forget drops what c keeps.
func (c *liveChain) forget() {
	c.keep(nil, 0, nil)
}

// read returns the chain of src when what c keeps still describes its
// start and the lines after it only carry the chain on: each a complete
// main-chain line whose parent is the line before it, none a compact
// boundary, summary or snip, none with the uuid of a line of the chain,
// no assistant line right after another (a response's parallel results
// move after its last line), and no last-prompt record naming another
// leaf; lines off the chain of known types are passed over, as the loader
// passes them. (Microcompact boundaries and collapse commits are read off
// the entries; they change none.) ok is false otherwise; the caller loads
// the file.
func (c *liveChain) read(src transcript.Source) (entries []transcript.Entry, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := src.Size()
	if c.size == 0 || len(c.entries) == 0 || identityOf(src) != c.id || size < c.size {
		return nil, false
	}
	if size == c.size {
		return c.entries, true
	}
	tail := make([]byte, size-c.size)
	if n, err := src.ReadAt(tail, c.size); n != len(tail) && err != nil {
		return nil, false
	}
	if tail[len(tail)-1] != '\n' {
		return nil, false // a line still being written, or torn
	}
	if c.uuids == nil {
		c.uuids = make(map[string]bool, len(c.entries))
		for i := range c.entries {
			c.uuids[c.entries[i].UUID] = true
		}
	}
	leaf := &c.entries[len(c.entries)-1]
	if leaf.IsSidechain {
		return nil, false
	}
	var added []transcript.Entry
	seen := map[string]bool{}
	for line := range bytes.Lines(tail) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := transcript.DecodeEntry(line)
		if err != nil {
			return nil, false // the loader says what it makes of it
		}
		if e.Type == transcript.TypeLastPrompt {
			if e.LeafUUID != "" && e.LeafUUID != leaf.UUID {
				return nil, false
			}
			continue
		}
		if !e.IsChain() {
			if !transcript.KnownLineType(e.Type) {
				return nil, false // the loader warns of it
			}
			continue
		}
		if e.ParentUUID != leaf.UUID || e.IsSidechain || c.uuids[e.UUID] || seen[e.UUID] ||
			e.IsCompactBoundary() || e.IsCompactSummary || len(e.SnipMetadata) > 0 ||
			(e.Type == transcript.TypeAssistant && leaf.Type == transcript.TypeAssistant) {
			return nil, false
		}
		seen[e.UUID] = true
		added = append(added, e)
		leaf = &added[len(added)-1]
	}
	// Past its length: what a caller was given before stays as it was.
	c.entries = append(c.entries[:len(c.entries):len(c.entries)], added...)
	for _, e := range added {
		c.uuids[e.UUID] = true
	}
	c.size = size
	return c.entries, true
}

// identityOf returns the identity of src (transcript.Identified), "" when
// it has none or src is nil.
func identityOf(src transcript.Source) string {
	if s, ok := src.(transcript.Identified); ok {
		return s.Identity()
	}
	return ""
}

// liveEntries returns the session's active chain as written so far, as
// live reads it: from what a.chain keeps when it can (see liveChain.read).
func (a *Agent) liveEntries(ctx context.Context) ([]transcript.Entry, error) {
	if err := a.writer.Flush(ctx); err != nil {
		return nil, err
	}
	src, err := a.store.OpenSource(ctx, a.id)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if entries, ok := a.chain.read(src); ok {
		return entries, nil
	}
	conv, err := a.loadLive(ctx, src)
	if err != nil {
		return nil, err
	}
	return conv.Entries, nil
}

// loadLive loads src, the session's transcript, without repairs, and
// keeps its chain in a.chain.
func (a *Agent) loadLive(ctx context.Context, src transcript.Source) (*transcript.Conversation, error) {
	size := src.Size()
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{NoRepair: true, Cache: a.lines})
	if err != nil {
		a.chain.forget()
		return nil, err
	}
	a.chain.keepLoaded(src, size, conv)
	return conv, nil
}
