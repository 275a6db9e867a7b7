package transcript_test

import (
	"context"
	"os"
	"path/filepath"
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
	summary := func(c *transcript.Conversation) []string {
		out := []string{"leaf " + c.Leaf}
		for _, e := range c.Entries {
			m, _, _ := e.DecodeMessage()
			out = append(out, e.UUID+" "+strings.Join(textsOf(m), "|"))
		}
		return append(out, c.Warnings...)
	}
	check := func(step string) {
		t.Helper()
		if diff := cmp.Diff(summary(load(nil)), summary(load(cache))); diff != "" {
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

func textsOf(m transcript.APIMessage) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b.Type+":"+b.Text)
	}
	return out
}
