package transcript_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/transcript"
)

// TestLineCache loads a file, lets it grow (a new turn and a damaged line)
// and be rewritten, and checks that loading it again through the cache
// gives what a fresh load gives each time.
func TestLineCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st := generateFile(t, path, gen.Options{Size: 200 << 10, Seed: 5})
	cache := &transcript.LineCache{}
	load := func(c *transcript.LineCache) *transcript.Conversation {
		t.Helper()
		src, err := transcript.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	check := func(step string) {
		t.Helper()
		if diff := cmp.Diff(summarize(load(nil)), summarize(load(cache))); diff != "" {
			t.Errorf("%s: the cached load differs from a fresh one (-fresh +cached):\n%s", step, diff)
		}
	}
	check("first load")
	appendLine := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	appendLine(`{"parentUuid":"` + st.Leaf + `","isSidechain":false,"type":"user","message":{"role":"user","content":"and one more thing"},"uuid":"11111111-1111-4111-8111-111111111111","timestamp":"2026-01-12T12:00:00.000Z","sessionId":"` + st.SessionID + `"}`)
	appendLine(`{"type":"user","uuid":`)
	check("after a turn and a damaged line")
	// Only the bytes appended since the last load are read again.
	appendLine(`{"type":"last-prompt","lastPrompt":"and one more thing","leafUuid":"11111111-1111-4111-8111-111111111111","sessionId":"` + st.SessionID + `"}`)
	if after, fresh := load(cache), load(nil); after.BytesRead > 200 || fresh.BytesRead < 200<<10 {
		t.Errorf("a load after one appended line of 158 bytes read %d bytes (%d without the cache): the cached prefix was not used", after.BytesRead, fresh.BytesRead)
	}
	check("after a last-prompt record")
	// Another file in its place (shorter, its last line another): the
	// cache must not answer.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(b), "and one more thing")
	rewritten := strings.ReplaceAll(string(b[:cut]), `"content":"`, `"content":"X`)
	rewritten = rewritten[:strings.LastIndex(rewritten, "\n")+1]
	if err := os.WriteFile(path, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
	check("after the file was replaced")
}

func loadWith(t *testing.T, path string, c *transcript.LineCache) *transcript.Conversation {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// TestLineCacheCompacted grows a compacted session past the megabyte a
// load reads beyond its chain to cache the whole file: the cached prefix
// still advances (the second load after the growth reads only what was
// appended), and the lines read past the chain change nothing in the
// conversation (an older last-prompt record among them stays out).
func TestLineCacheCompacted(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	generateFile(t, full, gen.Options{Size: 1600 << 10, Seed: 6, CompactEvery: 300 << 10})
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// The first part ends after a compaction and before the next
	// last-prompt record, past half a megabyte.
	cut, size := -1, 0
	for i, l := range lines {
		size += len(l)
		if size > 500<<10 && strings.Contains(l, `"isCompactSummary":true`) {
			cut = i + 1
			break
		}
	}
	if cut < 0 {
		t.Fatal("no compaction past 500 KB in the generated session")
	}
	path := filepath.Join(dir, "s.jsonl")
	writeLines(t, path, lines[:cut])
	cache := &transcript.LineCache{}
	check := func(step string) *transcript.Conversation { return checkCached(t, path, cache, step) }
	check("right after a compaction")
	// The session grows past 1 MB, compacting twice more.
	writeLines(t, path, lines)
	check("grown past a megabyte")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := `{"type":"custom-title","customTitle":"grown","sessionId":"x"}` + "\n"
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if c := check("one line later"); c.BytesRead != int64(len(extra)) {
		t.Errorf("the load after one appended line of %d bytes read %d bytes: the cached prefix did not advance", len(extra), c.BytesRead)
	}
}

// TestLineCacheOtherFile puts another file in the session's place, of the
// same size and with the same last line: the cache must not answer for it.
func TestLineCacheOtherFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	generateFile(t, path, gen.Options{Size: 100 << 10, Seed: 7})
	cache := &transcript.LineCache{}
	loadWith(t, path, cache)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes but one letter in the first prompt, renamed over the
	// file as an editor or a restore would.
	i := strings.Index(string(b), `"role":"user","content":"`) + len(`"role":"user","content":"`)
	other := slices.Clone(b)
	other[i] ^= 0x20
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, other, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summarize(loadWith(t, path, nil)), summarize(loadWith(t, path, cache))); diff != "" {
		t.Errorf("the cached load of the other file differs from a fresh one (-fresh +cached):\n%s", diff)
	}
}

func textsOf(m transcript.APIMessage) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b.Type+":"+b.Text)
	}
	return out
}

// TestLineCacheDrainChangesNothing: a load with a cache reads the lines
// before a compaction near the start of the file to cache them all; the
// last-prompt record among them must not become the conversation's, as a
// load without the cache never reads it.
func TestLineCacheDrainChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	const sid = `"sessionId":"5e55105e-0000-4000-8000-000000000000"`
	lines := []string{
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"first"},"uuid":"a0000000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:00.000Z",` + sid + `}`,
		`{"parentUuid":"a0000000-0000-4000-8000-000000000000","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"one"}]},"uuid":"b0000000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:01.000Z",` + sid + `}`,
		`{"type":"last-prompt","lastPrompt":"first","leafUuid":"b0000000-0000-4000-8000-000000000000",` + sid + `}`,
		`{"parentUuid":null,"logicalParentUuid":"b0000000-0000-4000-8000-000000000000","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":10},"uuid":"c0000000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:02.000Z",` + sid + `}`,
		`{"parentUuid":"c0000000-0000-4000-8000-000000000000","isSidechain":false,"type":"user","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"SUMMARY"},"uuid":"d0000000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:03.000Z",` + sid + `}`,
		`{"parentUuid":"d0000000-0000-4000-8000-000000000000","isSidechain":false,"type":"user","message":{"role":"user","content":"second"},"uuid":"e0000000-0000-4000-8000-000000000000","timestamp":"2026-01-12T12:00:04.000Z",` + sid + `}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := &transcript.LineCache{}
	for _, step := range []string{"first load", "from the cache"} {
		fresh, cached := loadWith(t, path, nil), loadWith(t, path, cache)
		if diff := cmp.Diff(summarize(fresh), summarize(cached)); diff != "" {
			t.Errorf("%s: the cached load differs from a fresh one (-fresh +cached):\n%s", step, diff)
		}
	}
	if c := loadWith(t, path, cache); c.LastPrompt != "" || c.BytesRead != 0 {
		t.Errorf("last prompt %q, %d bytes read: want none (the chain after the compaction has none) from the whole file cached", c.LastPrompt, c.BytesRead)
	}
}

// TestLineCacheForget: a cache that forgot what it held (a compaction was
// written) gives what a fresh load gives, and the load reads the file back
// only to the last compact boundary, not the whole of it again.
func TestLineCacheForget(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.jsonl")
	generateFile(t, full, gen.Options{Size: 1200 << 10, Seed: 7, CompactEvery: 400 << 10})
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	first, last := -1, -1
	for i, l := range lines {
		if strings.Contains(l, `"subtype":"compact_boundary"`) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last == first {
		t.Fatal("fewer than two compactions in the generated session")
	}
	// Before its first compaction, a load reads the whole file: the cache
	// then holds all of it.
	path := filepath.Join(dir, "s.jsonl")
	writeLines(t, path, lines[:first])
	cache := &transcript.LineCache{}
	check := func(step string) *transcript.Conversation { return checkCached(t, path, cache, step) }
	check("before the compaction")
	writeLines(t, path, lines)
	cache.Forget()
	c := check("compacted, the cache forgotten")
	// Read back to the last boundary only (past the first, to where the
	// cache's lines started, the load would read with or without them;
	// TestLineCacheHoldsOnce checks that Forget lets them go).
	after, sinceFirst := int64(len(strings.Join(lines[last:], ""))), int64(len(strings.Join(lines[first:], "")))
	if c.BytesRead >= sinceFirst || c.BytesRead < after {
		t.Errorf("the load after Forget read %d bytes; the last compaction's boundary is %d bytes from the end, the first %d", c.BytesRead, after, sinceFirst)
	}
	check("again")
}

// checkCached loads path with cache and without, reports at step where the
// two differ, and returns the cached load.
func checkCached(t *testing.T, path string, cache *transcript.LineCache, step string) *transcript.Conversation {
	t.Helper()
	fresh, cached := loadWith(t, path, nil), loadWith(t, path, cache)
	if diff := cmp.Diff(summarize(fresh), summarize(cached)); diff != "" {
		t.Errorf("%s: the cached load differs from a fresh one (-fresh +cached):\n%s", step, diff)
	}
	return cached
}

// writeLines writes lines, joined, to path.
func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}
