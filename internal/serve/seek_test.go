package serve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
)

// TestSeekPagesAsLineScan: the page before an event found by the raw
// search is the page the line scan finds, for events all through a
// session, with blocks of the default size, smaller than a line and
// about a line; an unknown id is ErrUnknownBefore for both.
func TestSeekPagesAsLineScan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(f, gen.Options{Size: 600 << 10, Seed: 3})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	src := mustOpen(t, path)
	ctx := context.Background()
	ids := []string{"no-such-event"}
	for i := 0; i < len(st.Resume); i += 1 + len(st.Resume)/40 {
		ids = append(ids, st.Resume[i])
	}
	ids = append(ids, st.Resume[0], st.Resume[len(st.Resume)-1])
	for _, block := range []int64{0, 61, 3000} {
		if block > 0 {
			serve.SetSeekBlock(t, block)
		}
		for _, id := range ids {
			want, werr := serve.HistoryByLines(ctx, src, id, 50)
			got, err := serve.History(ctx, src, id, 50)
			if !errors.Is(err, werr) {
				t.Fatalf("block %d, before %s: error %v, the line scan's %v", block, id, err, werr)
			}
			if !reflect.DeepEqual(want, got) { // cmp.Diff of every page's bytes is slow
				t.Fatalf("block %d, before %s (-line scan +search):\n%s", block, id, cmp.Diff(want, got))
			}
		}
	}
}

// TestSeekNotMisled: the text "uuid":"<id>" found where it is not the
// event's own line — nested in a later line, in a line that is not a
// conversation event, in the torn end — is passed over; an id the search
// cannot look for raw (a quote, a backslash) is found by the line scan.
func TestSeekNotMisled(t *testing.T) {
	lines := []string{
		`{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"say \"uuid\":\"a\""}]}}`,
		`{"type":"user","uuid":"c","parentUuid":"b","message":{"role":"user","content":"x"},"toolUseResult":{"uuid":"a"}}`,
		`{"type":"summary","uuid":"a","summary":"not an event"}`,
		`{"type":"user","uuid":"q\"\\","parentUuid":"c","message":{"role":"user","content":"y"}}`,
		`{"type":"user","uuid":"d","parentUuid":"q\"\\","message":{"role":"user","content":"z","extra":{"uuid":"c"}}}`,
		`{"type":"user","uuid":"a","parentUuid":"d"`, // torn
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	src := mustOpen(t, path)
	ctx := context.Background()
	for _, block := range []int64{0, 7} {
		if block > 0 {
			serve.SetSeekBlock(t, block)
		}
		for _, c := range []struct {
			before string
			want   []string // the page's uuids
			err    error
		}{
			{"a", nil, nil},
			{"b", []string{"a"}, nil},
			{"c", []string{"a", "b"}, nil},
			{`q"\`, []string{"a", "b", "c"}, nil},
			{"d", []string{"a", "b", "c", `q"\`}, nil},
			{"e", nil, serve.ErrUnknownBefore},
		} {
			p, err := serve.History(ctx, src, c.before, 50)
			if !errors.Is(err, c.err) {
				t.Fatalf("block %d, before %s: error %v, want %v", block, c.before, err, c.err)
			}
			var got []string
			for _, e := range p.Events {
				ent, err := transcript.DecodeEntry(e)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ent.UUID)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("block %d, before %s (-want +got):\n%s", block, c.before, diff)
			}
			want, werr := serve.HistoryByLines(ctx, src, c.before, 50)
			if diff := cmp.Diff(want, p); diff != "" || !errors.Is(err, werr) {
				t.Errorf("block %d, before %s: not the line scan's page (%v, %v):\n%s", block, c.before, err, werr, diff)
			}
		}
	}
}
