package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/transcript"
)

// TestMappedLoadIsIdentical loads transcripts of every shape twice, from
// a file it maps and from the same bytes in memory (copies), and checks
// that the requests and lines made from either are byte for byte the same.
func TestMappedLoadIsIdentical(t *testing.T) {
	defer transcript.SetMapMin(0)()
	cases := map[string][]byte{}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		cases[fmt.Sprintf("random %d", seed)] = randomTranscript(r, 1+r.IntN(60))
	}
	sample, err := os.ReadFile("testdata/cc-2.1.197-manual-compact.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cases["Claude Code sample"] = sample
	var g bytes.Buffer
	if _, err := gen.Generate(&g, gen.Options{Size: 3 << 20, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	cases["generated"] = g.Bytes()
	cases["generated, damaged"] = gen.Damage(g.Bytes())
	mappedSome := false
	for name, data := range cases {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := func() transcript.LoadOptions {
			n := 0
			return transcript.LoadOptions{NewUUID: func() string { n++; return fmt.Sprintf("new-%d", n) },
				Now: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }, Map: true}
		}
		src, err := transcript.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mapped, err := transcript.Load(context.Background(), src, opts())
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		copied, err := transcript.Load(context.Background(), transcript.BytesSource(data), opts())
		if err != nil {
			t.Fatal(err)
		}
		got, want := requestOf(t, mapped), requestOf(t, copied)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the request from the mapped load differs:\n%s\nfrom copies:\n%s", name, got, want)
		}
		if len(mapped.Entries) != len(copied.Entries) {
			t.Fatalf("%s: %d entries mapped, %d copied", name, len(mapped.Entries), len(copied.Entries))
		}
		for i := range mapped.Entries {
			a, err := mapped.Entries[i].MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			b, err := copied.Entries[i].MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: entry %d encodes as\n%s\nmapped, as\n%s\ncopied", name, i, a, b)
			}
		}
		for _, m := range mapped.Messages() {
			for _, b := range m.Content {
				mappedSome = mappedSome || filemap.Holds(b.Content)
			}
		}
	}
	if !mappedSome {
		t.Fatal("no tool result's content was a slice of a mapping")
	}
}

// requestOf is the request body a resume of c sends first.
func requestOf(t *testing.T, c *transcript.Conversation) []byte {
	t.Helper()
	body, err := anthropic.MarshalRequest(&model.Request{Model: "m", Messages: c.Messages()})
	if err != nil {
		t.Fatal(err)
	}
	return body
}
