package transcript

import (
	"context"
	"testing"
	"unsafe"

	"github.com/cairn-dev/cairn/bench/gen"
)

// TestLineCacheHoldsOnce: once a load cached the whole file, its entries
// are held by the prefix's lines only, not by the map as well.
func TestLineCacheHoldsOnce(t *testing.T) {
	var b bytesWriter
	if _, err := gen.Generate(&b, gen.Options{Size: 50 << 10, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cache := &LineCache{}
	if _, err := Load(context.Background(), BytesSource(b), LoadOptions{NoRepair: true, Cache: cache}); err != nil {
		t.Fatal(err)
	}
	if cache.prefix != int64(len(b)) || len(cache.lines) == 0 {
		t.Fatalf("prefix %d of %d bytes, %d lines: the whole file should be cached", cache.prefix, len(b), len(cache.lines))
	}
	if len(cache.m) != 0 {
		t.Errorf("the map still holds %d entries the prefix holds", len(cache.m))
	}
}

// TestLineCacheSharesEntries: a cached load keeps one copy of each entry,
// the conversation's, and of a line off the chain only what the loader
// reads; a chain line the conversation left out (a side branch) is the
// cache's own. The load after one appended line decodes only that line,
// and the cache lets go of the earlier conversation's entries.
func TestLineCacheSharesEntries(t *testing.T) {
	var b bytesWriter
	st, err := gen.Generate(&b, gen.Options{Size: 50 << 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	const side, next, last = "5ide0000-0000-4000-8000-000000000000", "4e470000-0000-4000-8000-000000000000", "1a570000-0000-4000-8000-000000000000"
	line := func(typ, uuid, parent, message string) string {
		return `{"parentUuid":"` + parent + `","isSidechain":false,"type":"` + typ + `","message":` + message + `,"uuid":"` + uuid + `","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"` + st.SessionID + `"}` + "\n"
	}
	b = append(b, `{"type":"last-prompt","lastPrompt":"again","leafUuid":"`+st.Leaf+`","sessionId":"`+st.SessionID+`"}`+"\n"...)
	b = append(b, line(TypeAssistant, side, st.Resume[0], `{"id":"msg_side","role":"assistant","content":[{"type":"text","text":"a side branch"}]}`)...)
	b = append(b, line(TypeUser, next, st.Leaf, `{"role":"user","content":"go on"}`)...)
	cache := &LineCache{}
	load := func() *Conversation {
		t.Helper()
		conv, err := Load(context.Background(), BytesSource(b), LoadOptions{NoRepair: true, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	first := load()
	in := func(e *Entry, entries []Entry) bool {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(entries)))
		p := uintptr(unsafe.Pointer(e))
		return p >= start && p < start+uintptr(len(entries))*unsafe.Sizeof(Entry{})
	}
	sideSeen := false
	for _, cl := range cache.lines {
		switch {
		case cl.e == nil:
		case !cl.e.IsChain():
			if cl.e.body != nil {
				t.Errorf("the %s line at byte %d keeps its body in the cache", cl.e.Type, cl.off)
			}
		case cl.e.UUID == side:
			sideSeen = true
			if in(cl.e, first.Entries) {
				t.Errorf("the side branch's entry is an element of the conversation, which does not hold it")
			}
		case !in(cl.e, first.Entries):
			t.Errorf("entry %s is held by the cache apart from the conversation's", cl.e.UUID)
		}
	}
	if !sideSeen {
		t.Fatalf("the side branch is not cached")
	}
	full := 0
	for _, cl := range cache.lines {
		if cl.e != nil && cl.e.Type == TypeLastPrompt && cl.e.LeafUUID != "" {
			full++
		}
	}
	if full != 1 {
		t.Errorf("the cache keeps %d last-prompt records with their leaf: want only the newest", full)
	}
	b = append(b, line(TypeUser, last, next, `{"role":"user","content":"and more"}`)...)
	second := load()
	if n := len(second.Entries); n != len(first.Entries)+1 || second.Entries[n-1].UUID != last {
		t.Fatalf("%d entries after one more line, the last %s: want %d, the last %s", n, second.Entries[n-1].UUID, len(first.Entries)+1, last)
	}
	for i := range first.Entries {
		if unsafe.SliceData(first.Entries[i].body) != unsafe.SliceData(second.Entries[i].body) {
			t.Errorf("entry %s was decoded again", first.Entries[i].UUID)
		}
	}
	held := func(conv *Conversation) {
		t.Helper()
		for _, cl := range cache.lines {
			if cl.e != nil && in(cl.e, conv.Entries) {
				t.Errorf("the cache still holds entry %s of an earlier load's conversation", cl.e.UUID)
			}
		}
	}
	held(first)
	// A rewind of one message: the entry that left the conversation is
	// the cache's own, and the second conversation's array goes.
	const rewind, back = "4e170000-0000-4000-8000-000000000000", "bac20000-0000-4000-8000-000000000000"
	b = append(b, line(TypeUser, rewind, next, `{"role":"user","content":"no, rather"}`)...)
	third := load()
	if n := len(third.Entries); n != len(second.Entries) || third.Entries[n-1].UUID != rewind {
		t.Fatalf("%d entries after a rewind of one message, the last %s: want %d, the last %s", n, third.Entries[n-1].UUID, len(second.Entries), rewind)
	}
	held(second)
	// A rewind to the first prompt: most entries leave, and the third
	// conversation's array, still all the cache's, stays: nothing is
	// copied, nor is the entry copied before copied again.
	before := map[int64]*Entry{}
	for _, cl := range cache.lines {
		before[cl.off] = cl.e
	}
	b = append(b, line(TypeUser, back, st.Resume[0], `{"role":"user","content":"start over"}`)...)
	fourth := load()
	if len(fourth.Entries) != 2 {
		t.Fatalf("%d entries after the rewind to the first prompt: want 2", len(fourth.Entries))
	}
	for _, cl := range cache.lines {
		if e, ok := before[cl.off]; ok && cl.e.IsChain() && !in(cl.e, fourth.Entries) && cl.e != e {
			t.Errorf("entry %s was copied: the conversation it was an element of is still the cache's", cl.e.UUID)
		}
	}
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// TestRepairKeepsArray: the entries a resume's repair adds fit in the
// conversation's array, which is not copied into a larger one that the
// conversation and the cache would keep.
func TestRepairKeepsArray(t *testing.T) {
	var b bytesWriter
	st, err := gen.Generate(&b, gen.Options{Size: 50 << 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, `{"parentUuid":"`+st.Leaf+`","isSidechain":false,"type":"assistant","message":{"id":"msg_cut","role":"assistant","content":[{"type":"tool_use","id":"toolu_cut","name":"Bash","input":{"command":"ls"}}]},"uuid":"c0700000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"`+st.SessionID+`"}`+"\n"...)
	conv, err := Load(context.Background(), BytesSource(b), LoadOptions{Cache: &LineCache{}})
	if err != nil {
		t.Fatal(err)
	}
	if conv.Repaired == 0 {
		t.Fatal("nothing repaired after a response cut short")
	}
	if n, c := len(conv.Entries), cap(conv.Entries); c > n-conv.Repaired+repairRoom {
		t.Errorf("%d entries (%d repaired) in an array of %d: the repair copied it into a larger one", n, conv.Repaired, c)
	}
}
