package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/transcript"
)

// chainLine is a transcript line of type typ, uuid id, hanging off parent.
func chainLine(typ, id, parent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":%q,"uuid":%q,"parentUuid":%s,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":%q,"content":"words of %s"}}`+"\n", typ, id, p, typ, id)
}

// loadedChain writes lines to a file, loads it as the session's reads do
// and keeps the chain in a liveChain.
func loadedChain(t *testing.T, path string, lines ...string) *liveChain {
	t.Helper()
	if err := os.WriteFile(path, []byte(concat(lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &liveChain{}
	c.keepLoaded(src, src.Size(), conv)
	return c
}

func concat(lines []string) string {
	var s string
	for _, l := range lines {
		s += l
	}
	return s
}

func appendTo(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(concat(lines)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func uuidsOf(entries []*transcript.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.UUID)
	}
	return out
}

// readBack reads path through c, and through a load of its own; ok is
// whether c served it.
func readBack(t *testing.T, c *liveChain, path string) (got, loaded []string, ok bool) {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pieces, ok := c.chain(src)
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	return uuidsOf(slices.Concat(pieces...)), uuidsOf(conv.Entries), ok
}

func TestLiveChainCarriedOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	c := loadedChain(t, path, chainLine("user", "u1", ""), chainLine("assistant", "a1", "u1"))
	got, loaded, ok := readBack(t, c, path)
	if !ok || !slices.Equal(got, loaded) {
		t.Fatalf("unchanged file: read %v (served %v), a load reads %v", got, ok, loaded)
	}
	appendTo(t, path,
		chainLine("user", "u2", "a1"),
		`{"type":"file-history-snapshot","messageId":"u2","snapshot":{}}`+"\n",
		`{"type":"last-prompt","lastPrompt":"words","leafUuid":"u2"}`+"\n",
		chainLine("system", "m1", "u2"),
		chainLine("assistant", "a2", "m1"))
	got, loaded, ok = readBack(t, c, path)
	if !ok || !slices.Equal(got, loaded) {
		t.Fatalf("carried on: read %v (served %v), a load reads %v", got, ok, loaded)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	given, _ := c.chain(src)
	src.Close()
	appendTo(t, path, chainLine("user", "u3", "a2"), chainLine("assistant", "a3", "u3"))
	if got, loaded, ok = readBack(t, c, path); !ok || !slices.Equal(got, loaded) {
		t.Fatalf("carried on again: read %v (served %v), a load reads %v", got, ok, loaded)
	}
	if got := uuidsOf(slices.Concat(given...)); !slices.Equal(got, []string{"u1", "a1", "u2", "m1", "a2"}) {
		t.Errorf("the chain given before became %v", got)
	}
}

func TestLiveChainFallsBack(t *testing.T) {
	base := []string{chainLine("user", "u1", ""), chainLine("assistant", "a1", "u1"), chainLine("user", "u2", "a1"), chainLine("assistant", "a2", "u2")}
	cases := map[string][]string{
		"a branch off an older line": {chainLine("user", "b1", "a1")},
		"a rewind's last-prompt":     {`{"type":"last-prompt","lastPrompt":"again","leafUuid":"a1"}` + "\n"},
		"a line torn":                {chainLine("user", "u3", "a2")[:40]},
		"a uuid of the chain again":  {chainLine("user", "u1", "a2")},
		"a compact boundary":         {`{"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":"a2","logicalParentUuid":"a2","sessionId":"s","content":"Conversation compacted"}` + "\n"},
		"a snip":                     {`{"type":"system","subtype":"snip","uuid":"sn","parentUuid":"a2","sessionId":"s","snipMetadata":{"removedUuids":["u2"]}}` + "\n"},
		"one response in two lines":  {chainLine("assistant", "a3", "a2")},
		"a sidechain":                {`{"type":"user","uuid":"s1","parentUuid":"a2","isSidechain":true,"sessionId":"s","message":{"role":"user","content":"x"}}` + "\n"},
		"a line of an unknown type":  {`{"type":"hologram","uuid":"h1"}` + "\n"},
		"garbage":                    {"not json\n"},
	}
	for name, tail := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			c := loadedChain(t, path, base...)
			appendTo(t, path, tail...)
			if got, _, ok := readBack(t, c, path); ok {
				t.Errorf("served %v from what it kept", got)
			}
			// The caller loads the file again: the old chain is not
			// held beside that load.
			if c.size != 0 || c.read != nil || c.added != nil || c.uuids != nil {
				t.Errorf("still keeps %d bytes' chain of %d entries after falling back", c.size, len(c.read))
			}
		})
	}
	t.Run("another file in its place", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		c := loadedChain(t, path, base...)
		other := path + ".new"
		if err := os.WriteFile(other, []byte(concat(append(slices.Clone(base), chainLine("user", "u3", "a2")))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(other, path); err != nil {
			t.Fatal(err)
		}
		if got, _, ok := readBack(t, c, path); ok {
			t.Errorf("served %v from what it kept of the file replaced", got)
		}
	})
	t.Run("cut shorter", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		c := loadedChain(t, path, base...)
		if err := os.Truncate(path, int64(len(concat(base[:2])))); err != nil {
			t.Fatal(err)
		}
		if got, _, ok := readBack(t, c, path); ok {
			t.Errorf("served %v from what it kept of a longer file", got)
		}
	})
	t.Run("a load that warned", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		c := loadedChain(t, path, append(slices.Clone(base), "torn {")...)
		appendTo(t, path, "\n", chainLine("user", "u3", "a2"))
		if got, _, ok := readBack(t, c, path); ok {
			t.Errorf("served %v after a load that skipped a torn line", got)
		}
	})
}
