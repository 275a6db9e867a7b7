package transcript

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
)

// withSnapshots returns a transcript of bench/gen's with a file-history
// snapshot line after its first line and every seventh, and those lines
// as a load that read from the given offset on would keep them.
func withSnapshots(t *testing.T, o gen.Options) (data []byte, snaps func(from int64) []RawLine) {
	t.Helper()
	var b bytes.Buffer
	if _, err := gen.Generate(&b, o); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var all []RawLine
	for i, line := range bytes.SplitAfter(b.Bytes(), []byte("\n")) {
		out.Write(line)
		if i%7 == 6 || i == 0 {
			s := fmt.Sprintf(`{"type":"file-history-snapshot","messageId":"m%d","snapshot":{"messageId":"m%d","trackedFileBackups":{},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`, i, i)
			all = append(all, RawLine{Offset: int64(out.Len()), Bytes: []byte(s)})
			out.WriteString(s + "\n")
		}
	}
	return out.Bytes(), func(from int64) []RawLine {
		var want []RawLine
		for _, r := range all {
			if r.Offset >= from {
				want = append(want, r)
			}
		}
		return want
	}
}

// TestLoadKeepsRawLines: a load asked for a type's lines gives every line
// of that type from RawFrom to the end of the file, whole and in order,
// and RawFrom is where a line starts: at most the chain's root when the
// conversation goes back to it, past the last compact boundary's
// predecessors when it does not. Read ahead on every core or a block at a
// time, and with a cache that held the start of the file.
func TestLoadKeepsRawLines(t *testing.T) {
	clean, cleanSnaps := withSnapshots(t, gen.Options{Size: 3 << 20, Seed: 7})
	compacted, compactedSnaps := withSnapshots(t, gen.Options{Size: 3 << 20, Seed: 8, CompactEvery: 1 << 20})
	load := func(t *testing.T, data []byte, cache *LineCache) *Conversation {
		t.Helper()
		conv, err := Load(t.Context(), BytesSource(data), LoadOptions{Cache: cache, NoRepair: true, Raw: []string{TypeFileHistorySnapshot}})
		if err != nil {
			t.Fatal(err)
		}
		return conv
	}
	check := func(t *testing.T, data []byte, conv *Conversation, snaps func(int64) []RawLine) {
		t.Helper()
		from := conv.RawFrom
		if from < 0 || from > int64(len(data)) || (from > 0 && data[from-1] != '\n') {
			t.Fatalf("RawFrom %d is not where a line starts", from)
		}
		if d := cmp.Diff(snaps(from), conv.Raw); d != "" {
			t.Errorf("Raw (-want +got):\n%s", d)
		}
	}
	for _, ahead := range []int64{1 << 20, 1 << 40} {
		t.Run(fmt.Sprintf("ahead=%d", ahead), func(t *testing.T) {
			old := readAheadAfter
			readAheadAfter = ahead
			defer func() { readAheadAfter = old }()

			conv := load(t, clean, nil)
			check(t, clean, conv, cleanSnaps)
			if root := int64(bytes.Index(clean, []byte(`"parentUuid":null`))); conv.RawFrom > root {
				t.Errorf("the chain goes back to its root at byte %d, but RawFrom is %d", root, conv.RawFrom)
			}
			conv = load(t, compacted, nil)
			check(t, compacted, conv, compactedSnaps)
			if conv.RawFrom == 0 || conv.RawFrom > int64(len(compacted))*2/3 {
				t.Errorf("RawFrom %d of %d bytes: the load should have stopped at the last compact boundary", conv.RawFrom, len(compacted))
			}
			if !strings.Contains(string(compacted[:conv.RawFrom]), `"subtype":"compact_boundary"`) {
				t.Error("no compact boundary before RawFrom")
			}

			// A load with a cache reads on to the start of the file to
			// cache it whole (its lines then count as read); a second
			// one reads only what was appended: RawFrom is past the
			// prefix the cache held.
			cache := &LineCache{}
			conv = load(t, clean, cache)
			check(t, clean, conv, cleanSnaps)
			if conv.RawFrom != 0 {
				t.Errorf("the load with a cache read the start of the file for it, but RawFrom is %d", conv.RawFrom)
			}
			more := append(append([]byte(nil), clean...), `{"type":"file-history-snapshot","messageId":"late","snapshot":{"messageId":"late","trackedFileBackups":{},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`+"\n"...)
			conv = load(t, more, cache)
			if conv.RawFrom != int64(len(clean)) || len(conv.Raw) != 1 || conv.Raw[0].Offset != int64(len(clean)) {
				t.Errorf("after an appended snapshot, the cached load gives RawFrom %d (the prefix is %d bytes) and %d raw lines", conv.RawFrom, len(clean), len(conv.Raw))
			}
		})
	}
}

// TestLoadWithoutRaw: a load that is not asked for raw lines keeps none.
func TestLoadWithoutRaw(t *testing.T) {
	data, _ := withSnapshots(t, gen.Options{Size: 200 << 10, Seed: 9})
	conv, err := Load(t.Context(), BytesSource(data), LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Raw) != 0 {
		t.Errorf("%d raw lines kept unasked", len(conv.Raw))
	}
}
