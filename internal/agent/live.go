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
	// much of it the chain describes; size is 0 when nothing is kept.
	id   string
	size int64
	// read is the chain as a load read it, shared with its Conversation;
	// added holds the entries of the lines that carried it on since, of
	// its own: appended to past the length a caller was given.
	read, added []*transcript.Entry
	// uuids holds the uuids of the chain, made when lines are first
	// added to it.
	uuids map[string]bool
}

// keep records that the first size bytes of the file src reads make the
// chain entries.
func (c *liveChain) keep(src transcript.Source, size int64, entries []*transcript.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(src, size, entries)
}

// set is keep with c.mu held.
func (c *liveChain) set(src transcript.Source, size int64, entries []*transcript.Entry) {
	c.id, c.size, c.read, c.added, c.uuids = identityOf(src), size, entries, nil, nil
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

// chain returns the chain of src, in pieces (see compact.Lines), when
// what c keeps still describes its start and the lines after it only
// carry the chain on: each a complete main-chain line whose parent is the
// line before it, none a compact boundary, summary or snip, none with the
// uuid of a line of the chain, no assistant line right after another (a
// response's parallel results move after its last line), and no
// last-prompt record naming another leaf; lines off the chain of known
// types are passed over, as the loader passes them. (Microcompact
// boundaries and collapse commits are read off the entries; they change
// none.) ok is false otherwise; the caller loads the file, and c keeps
// nothing until the caller keeps what that load read.
func (c *liveChain) chain(src transcript.Source) (pieces [][]*transcript.Entry, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if !ok {
			// The old chain is dropped now, so that the caller's load
			// does not hold both (after a compaction of a long session,
			// the old one is most of the heap).
			c.set(nil, 0, nil)
		}
	}()
	size := src.Size()
	// A source with no identity could be another file as long; the
	// caller loads it.
	if c.size == 0 || len(c.read) == 0 || c.id == "" || identityOf(src) != c.id || size < c.size {
		return nil, false
	}
	pieces = [][]*transcript.Entry{c.read, c.added[:len(c.added):len(c.added)]}
	if size == c.size {
		return pieces, true
	}
	tail := make([]byte, size-c.size)
	if n, err := src.ReadAt(tail, c.size); n != len(tail) && err != nil {
		return nil, false
	}
	if tail[len(tail)-1] != '\n' {
		return nil, false // a line still being written, or torn
	}
	if c.uuids == nil {
		c.uuids = make(map[string]bool, len(c.read))
		for _, e := range c.read {
			c.uuids[e.UUID] = true
		}
	}
	leaf := c.read[len(c.read)-1]
	if len(c.added) > 0 {
		leaf = c.added[len(c.added)-1]
	}
	if leaf.IsSidechain {
		return nil, false
	}
	var added []*transcript.Entry
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
		added = append(added, &e)
		leaf = &e
	}
	c.added = append(c.added, added...)
	for _, e := range added {
		c.uuids[e.UUID] = true
	}
	c.size = size
	return [][]*transcript.Entry{c.read, c.added[:len(c.added):len(c.added)]}, true
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
// live reads it, in pieces (see compact.Lines): from what a.chain keeps
// when it can (see liveChain.chain).
func (a *Agent) liveEntries(ctx context.Context) ([][]*transcript.Entry, error) {
	src, err := a.openWritten(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if pieces, ok := a.chain.chain(src); ok {
		return pieces, nil
	}
	conv, err := a.loadLive(ctx, src)
	if err != nil {
		return nil, err
	}
	return [][]*transcript.Entry{conv.Entries}, nil
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
