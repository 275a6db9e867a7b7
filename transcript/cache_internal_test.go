package transcript

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
)

// cachedSession generates a small session and loads it through a new
// cache, which then holds the whole file.
func cachedSession(t *testing.T) (bytesWriter, *LineCache) {
	t.Helper()
	var b bytesWriter
	if _, err := gen.Generate(&b, gen.Options{Size: 50 << 10, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cache := &LineCache{}
	if _, err := Load(context.Background(), BytesSource(b), LoadOptions{NoRepair: true, Cache: cache}); err != nil {
		t.Fatal(err)
	}
	return b, cache
}

// TestLineCacheHoldsOnce: once a load cached the whole file, its entries
// are held by the prefix's lines only, not by the map as well.
func TestLineCacheHoldsOnce(t *testing.T) {
	b, cache := cachedSession(t)
	if cache.prefix != int64(len(b)) || len(cache.lines) == 0 {
		t.Fatalf("prefix %d of %d bytes, %d lines: the whole file should be cached", cache.prefix, len(b), len(cache.lines))
	}
	if len(cache.m) != 0 {
		t.Errorf("the map still holds %d entries the prefix holds", len(cache.m))
	}
	cache.Forget()
	if cache.prefix != 0 || cache.lines != nil || cache.m != nil {
		t.Errorf("after Forget: prefix %d, %d lines, %d in the map; want nothing held", cache.prefix, len(cache.lines), len(cache.m))
	}
}

// TestLineCacheForgetDuringLoad: what a load that took the cache before a
// Forget leaves there is dropped (it read what the cache was told to let
// go of), as is what one of a file another has since replaced in the
// cache leaves; a load after the Forget fills the cache again.
func TestLineCacheForgetDuringLoad(t *testing.T) {
	b, cache := cachedSession(t)
	prefix, lines, taken := cache.prefixFor(BytesSource(b))
	if prefix == 0 || len(lines) == 0 {
		t.Fatal("the whole file is not cached")
	}
	cache.Forget()
	cache.record(prefix, lines, taken)
	cache.store(lines[0], taken)
	if cache.prefix != 0 || cache.lines != nil || len(cache.m) != 0 {
		t.Errorf("a load from before Forget left a prefix of %d bytes, %d lines, %d in the map", cache.prefix, len(cache.lines), len(cache.m))
	}
	_, _, now := cache.prefixFor(BytesSource(b))
	cache.record(prefix, lines, now)
	if cache.prefix != prefix {
		t.Errorf("a load after Forget left a prefix of %d bytes, want %d", cache.prefix, prefix)
	}
	// Another file taking the cache empties it the same way: a load of
	// the first one still under way leaves nothing.
	dir := t.TempDir()
	var srcs [2]Source
	for i := range srcs {
		path := filepath.Join(dir, fmt.Sprintf("%d.jsonl", i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		srcs[i] = src
	}
	_, _, first := cache.prefixFor(srcs[0])
	cache.prefixFor(srcs[1])
	cache.record(prefix, lines, first)
	if cache.prefix != 0 {
		t.Errorf("a load of a file the cache no longer serves left a prefix of %d bytes", cache.prefix)
	}
}

// TestLineCacheSharesEntries: a cached load keeps one entry for each
// chain line, the one its conversation holds (the same *Entry), and of a
// line off the chain only what the loader reads; a chain line the
// conversation left out (a side branch) is the cache's alone. The loads
// after lines were appended decode only those lines: the conversations
// share the entries, and none is copied however the chain changes.
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
	sideSeen := false
	for _, cl := range cache.lines {
		switch {
		case cl.e == nil:
		case !cl.e.IsChain():
			if cl.e.body != "" {
				t.Errorf("the %s line at byte %d keeps its body in the cache", cl.e.Type, cl.off)
			}
		case cl.e.UUID == side:
			sideSeen = true
			if slices.Contains(first.Entries, cl.e) {
				t.Errorf("the side branch's entry is in the conversation, which does not hold it")
			}
		case !slices.Contains(first.Entries, cl.e):
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
	for i, e := range first.Entries {
		if second.Entries[i] != e {
			t.Errorf("entry %s was decoded again", e.UUID)
		}
	}
	// A rewind of one message, then one to the first prompt: every line
	// the cache held keeps its entry.
	before := map[int64]*Entry{}
	for _, cl := range cache.lines {
		before[cl.off] = cl.e
	}
	const rewind, back = "4e170000-0000-4000-8000-000000000000", "bac20000-0000-4000-8000-000000000000"
	b = append(b, line(TypeUser, rewind, next, `{"role":"user","content":"no, rather"}`)...)
	third := load()
	if n := len(third.Entries); n != len(second.Entries) || third.Entries[n-1].UUID != rewind {
		t.Fatalf("%d entries after a rewind of one message, the last %s: want %d, the last %s", n, third.Entries[n-1].UUID, len(second.Entries), rewind)
	}
	b = append(b, line(TypeUser, back, st.Resume[0], `{"role":"user","content":"start over"}`)...)
	fourth := load()
	if len(fourth.Entries) != 2 {
		t.Fatalf("%d entries after the rewind to the first prompt: want 2", len(fourth.Entries))
	}
	for _, cl := range cache.lines {
		if e, ok := before[cl.off]; ok && cl.e.IsChain() && cl.e != e {
			t.Errorf("entry %s was copied or decoded again", cl.e.UUID)
		}
	}
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// TestLineCacheLargeFile: a load that reads a file of several megabytes
// whole sums only the lines it reads first (the rest end in the prefix,
// where no one looks at them again), yet the next load takes the prefix
// and decodes only what was appended; behind a torn last line longer
// than the first megabyte, the prefix's last line is summed all the same.
func TestLineCacheLargeFile(t *testing.T) {
	var b bytesWriter
	st, err := gen.Generate(&b, gen.Options{Size: 3 << 20, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	load := func(data []byte, cache *LineCache) *Conversation {
		t.Helper()
		conv, err := Load(context.Background(), BytesSource(data), LoadOptions{NoRepair: true, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	cache := &LineCache{}
	first := load(b, cache)
	unsummed := 0
	for _, cl := range cache.lines {
		if cl.n < 0 {
			unsummed++
		}
	}
	if cache.prefix != int64(len(b)) || unsummed == 0 || cache.lines[len(cache.lines)-1].n < 0 {
		t.Fatalf("prefix %d of %d bytes, %d of %d lines unsummed, the last summed: %v", cache.prefix, len(b), unsummed, len(cache.lines), cache.lines[len(cache.lines)-1].n >= 0)
	}
	more := append(b, `{"parentUuid":"`+st.Leaf+`","isSidechain":false,"type":"user","message":{"role":"user","content":"more"},"uuid":"a0000000-0000-4000-8000-000000000001","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"`+st.SessionID+`"}`+"\n"...)
	second := load(more, cache)
	if second.BytesRead > 1<<10 {
		t.Errorf("the load after one appended line read %d bytes", second.BytesRead)
	}
	for i, e := range first.Entries {
		if second.Entries[i] != e {
			t.Fatalf("entry %s was decoded again", e.UUID)
		}
	}

	// A line longer than a block, then a torn last line of 2 MB, with the
	// loader reading on at once (it stops summing lines after the first
	// two reads): the long line, the prefix's last, is summed, and the
	// next load can take the prefix.
	defer func(old int64) { readAheadAfter = old }(readAheadAfter)
	readAheadAfter = 1
	long := `{"parentUuid":"` + st.Leaf + `","isSidechain":false,"type":"user","message":{"role":"user","content":"` + strings.Repeat("y", 300<<10) + `"},"uuid":"a0000000-0000-4000-8000-000000000002","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"` + st.SessionID + `"}` + "\n"
	torn := append(append(append([]byte(nil), b...), long...), `{"type":"user","message":{"role":"user","content":"`...)
	torn = append(torn, bytes.Repeat([]byte("x"), 2<<20)...)
	cache = &LineCache{}
	load(torn, cache)
	if want := int64(len(b) + len(long)); cache.prefix != want || cache.lines[len(cache.lines)-1].n < 0 {
		t.Fatalf("torn: prefix %d (want %d), the last line summed: %v", cache.prefix, want, cache.lines[len(cache.lines)-1].n >= 0)
	}
	if _, lines, _ := cache.prefixFor(BytesSource(torn)); lines == nil {
		t.Error("torn: the next load cannot take the prefix")
	}
}

// TestLineCacheLongChainNotWhole: a load that stops before the start of
// the file after reading megabytes (a long chain since the last
// compaction, or since its root) caches every line it read, those it read
// after it stopped summing lines included: the load after one more line
// decodes that line alone.
func TestLineCacheLongChainNotWhole(t *testing.T) {
	// Another session's 2 MB, then the chain: its root is where the load
	// stops, with more left before it than a load reads to fill its
	// cache (drainLimit).
	var b, chain bytesWriter
	if _, err := gen.Generate(&b, gen.Options{Size: 2 << 20, Seed: 8}); err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(&chain, gen.Options{Size: 3 << 20, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, chain...)
	cache := &LineCache{}
	load := func(data []byte) *Conversation {
		t.Helper()
		conv, err := Load(context.Background(), BytesSource(data), LoadOptions{NoRepair: true, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	first := load(b)
	if first.BytesRead < 2<<20 || first.BytesRead >= int64(len(b)) || cache.prefix != 0 {
		t.Fatalf("read %d of %d bytes, cached prefix %d: want a load stopped at the chain's root, megabytes back", first.BytesRead, len(b), cache.prefix)
	}
	more := append(b, `{"parentUuid":"`+st.Leaf+`","isSidechain":false,"type":"user","message":{"role":"user","content":"more"},"uuid":"a0000000-0000-4000-8000-000000000003","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"`+st.SessionID+`"}`+"\n"...)
	second := load(more)
	if len(second.Entries) != len(first.Entries)+1 {
		t.Fatalf("%d entries after one more line, want %d", len(second.Entries), len(first.Entries)+1)
	}
	for i, e := range first.Entries {
		if second.Entries[i] != e {
			t.Fatalf("entry %d of %d (%s) was decoded again", i, len(first.Entries), e.UUID)
		}
	}
}
