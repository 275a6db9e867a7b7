package filehistory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/transcript"
)

// TestMarkedScan holds the block scan to jsonl.Forward's lines: the
// same marked lines and numbers, over random files of short and longer
// lines, empty lines, marks cut by the block boundaries, near misses of
// the mark and a last line with no newline, read a byte or many at a
// time, from a reader that can read a long line again and from one that
// cannot. (Lines over the limit: TestLoadLongLines.)
func TestMarkedScan(t *testing.T) {
	const maxLine = 1 << 20
	mark := []byte(`"file-history-snapshot"`)
	pieces := []string{`{"a":1}`, `"file-history-snapshot"`, `y-snapshot"`, `"file-history-snapshot\"`, `file-history-snapshot"`, `xxxxxxxxxx`, `""`, ``}
	type hit struct {
		No   int
		Line string
	}
	compared := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		var b strings.Builder
		for range rng.IntN(40) {
			n := rng.IntN(8)
			if rng.IntN(10) == 0 {
				n = 80 + rng.IntN(200) // longer than most blocks
			}
			for range n {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString(pieces[1]) // a torn last line
		}
		in := b.String()
		var want []hit
		var wantWarn []string
		jsonl.Forward(strings.NewReader(in), maxLine, func(s string) { wantWarn = append(wantWarn, s) }, func(l jsonl.Line) error {
			if bytes.Contains(l.Bytes, mark) {
				want = append(want, hit{l.No, string(l.Bytes)})
			}
			return nil
		})
		for _, block := range []int{1, 7, 64, 4096} {
			var got []hit
			var gotWarn []string
			m := marked{mark: mark, cut: len(`"file-histor`), block: block, maxLine: maxLine, warn: func(s string) { gotWarn = append(gotWarn, s) }}
			// Odd seeds read through a plain io.Reader: long lines are
			// then kept whole, not read again.
			var r io.Reader = strings.NewReader(in)
			if seed%2 == 1 {
				r = struct{ io.Reader }{r}
			}
			err := m.scan(context.Background(), r, func(no int, line []byte) error {
				got = append(got, hit{no, string(line)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("seed %d, block %d: lines (-Forward +scan):\n%s", seed, block, d)
			}
			if len(want) > 0 {
				compared++
			}
			if d := cmp.Diff(wantWarn, gotWarn); d != "" {
				t.Fatalf("seed %d, block %d: warnings (-Forward +scan):\n%s", seed, block, d)
			}
		}
	}
	if compared < 500 {
		t.Errorf("only %d scans found marked lines", compared)
	}
}

// TestLoadMarkInMessages: the type string inside a message — quoted in
// its text, or as the whole of a text — finds no snapshot and makes no
// warning; the snapshots around it, and a damaged one, are read as ever.
func TestLoadMarkInMessages(t *testing.T) {
	snap := func(id string) string {
		return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{"/p/a.go":{"backupFileName":"0123456789abcdef@v1","version":1,"backupTime":"2026-01-02T10:00:01.000Z"}},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`, id, id)
	}
	in := strings.Join([]string{
		snap("u1"),
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"grep for \"type\":\"file-history-snapshot\" please"},"uuid":"u1","sessionId":"s"}`,
		`{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"file-history-snapshot"}]},"uuid":"a1","sessionId":"s"}`,
		`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"{\"type\":\"file-history-snapshot\",\"messageId\":\"zz\"}"}]},"uuid":"u2","sessionId":"s"}`,
		`{"type":"file-history-snapshot","messageId":"bad","snapshot":"not an object"}`,
		`{"type":"file-history-snapshot","messageId":`, // cut short: not JSON, and not a snapshot
		snap("u3"),
	}, "\n")
	snaps, warnings, err := Load(context.Background(), strings.NewReader(in), "/p")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.MessageID)
	}
	if d := cmp.Diff([]string{"u1", "u3"}, ids); d != "" {
		t.Errorf("snapshots (-want +got):\n%s", d)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "line 5: ") {
		t.Errorf("warnings %q, want one about line 5", warnings)
	}
}

// TestLoadLongLines: a line longer than the limit is skipped with a
// warning naming it, and a snapshot after it, in the same read block or
// the next, is read with its own line number.
func TestLoadLongLines(t *testing.T) {
	long := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}}`
	in := long + "\n" + `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{}}}` + "\n" + "{}\n"
	for _, block := range []int{16, 4096, 1 << 20} {
		var warnings []string
		m := marked{mark: snapshotMark, cut: len(`"file-histor`), block: block, maxLine: 1000, warn: func(s string) { warnings = append(warnings, s) }}
		var nos []int
		if err := m.scan(context.Background(), strings.NewReader(in), func(no int, _ []byte) error { nos = append(nos, no); return nil }); err != nil {
			t.Fatal(err)
		}
		if block < 1000 && (len(warnings) != 1 || warnings[0] != "line 1: longer than 1000 bytes, skipped") {
			t.Errorf("block %d: warnings %q", block, warnings)
		}
		if d := cmp.Diff([]int{2}, nos); d != "" {
			t.Errorf("block %d: marked lines (-want +got):\n%s", block, d)
		}
	}
}

// TestLoadCancelled: a cancelled context stops the scan with its error.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Load(ctx, strings.NewReader("{}\n"), "/p"); err == nil {
		t.Error("Load of a cancelled context succeeded")
	}
}

// TestLoadLongLineNotHeld: a 20 MB line with no snapshot in it (a huge
// tool output, a damaged line) is passed over a block at a time, not
// held whole; a snapshot line longer than a block, whose type comes
// last, is still read, whole, with its number.
func TestLoadLongLineNotHeld(t *testing.T) {
	big := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 20<<20) + `"}}`
	snap := `{"messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"pad":"` + strings.Repeat("y", 3<<20) + `"},"type":"file-history-snapshot"}`
	in := big + "\n" + snap + "\n{}\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	snaps, warnings, err := Load(context.Background(), strings.NewReader(in), "/p")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].MessageID != "m" || len(warnings) != 0 {
		t.Fatalf("snapshots %+v, warnings %q: want the one of line 2", snaps, warnings)
	}
	// The snapshot line is read whole (3 MB) and decoded; the 20 MB line
	// costs a block or two.
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("Load allocated %d MB for a 20 MB line it has no use for", got>>20)
	}
}

// TestLoadLongLineFromAReaderPartlyRead: a reader already read into (a
// file seeked past its start) reads a long snapshot line again from where
// it really starts, not from the start of the reader's bytes.
func TestLoadLongLineFromAReaderPartlyRead(t *testing.T) {
	snap := `{"messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"pad":"` + strings.Repeat("y", 3<<20) + `"},"type":"file-history-snapshot"}`
	skipped := `{"type":"file-history-snapshot","messageId":"before","snapshot":{"messageId":"before","trackedFileBackups":{}}}` + "\n"
	r := strings.NewReader(skipped + snap + "\n")
	if _, err := r.Seek(int64(len(skipped)), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	snaps, warnings, err := Load(context.Background(), r, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].MessageID != "m" || len(warnings) != 0 {
		t.Fatalf("snapshots %+v, warnings %q: want the long one only", snaps, warnings)
	}
}

// TestLoadRest: the snapshots of a transcript read in two parts, the
// lines before a point by the scan and the snapshot lines after it as a
// transcript load keeps them (transcript.RawLine), are those of reading
// it whole, split at any line: an update after the split replaces a
// snapshot before it, and a damaged record after it is named by its byte.
func TestLoadRest(t *testing.T) {
	snap := func(id, msg, version string, update bool) string {
		return fmt.Sprintf(`{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{"/p/a.go":{"backupFileName":"0123456789abcdef@v%s","version":%s,"backupTime":"2026-01-02T10:00:01.000Z"}},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":%v}`, id, msg, version, version, update)
	}
	lines := []string{
		snap("u1", "u1", "1", false),
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"go"},"uuid":"u1","sessionId":"s"}`,
		snap("a1", "u1", "2", true),
		`{"type":"file-history-snapshot","messageId":"bad","snapshot":"not an object"}`,
		snap("u2", "u2", "3", false),
		`{"type":"last-prompt","lastPrompt":"go","sessionId":"s"}`,
		snap("u2", "u2", "4", true),
	}
	whole := strings.Join(lines, "\n") + "\n"
	want, wantWarnings, err := Load(t.Context(), strings.NewReader(whole), "/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || want[0].Files["/p/a.go"].Version != 2 || want[1].Files["/p/a.go"].Version != 4 || len(wantWarnings) != 1 {
		t.Fatalf("the whole file gives %+v, warnings %q", want, wantWarnings)
	}
	at := 0
	for i := range len(lines) + 1 {
		var rest []transcript.RawLine
		off := at
		for _, l := range lines[i:] {
			if strings.Contains(l, `"file-history-snapshot"`) {
				rest = append(rest, transcript.RawLine{Offset: int64(off), Bytes: []byte(l)})
			}
			off += len(l) + 1
		}
		got, warnings, err := LoadRest(t.Context(), strings.NewReader(whole[:at]), rest, "/p")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmp.Comparer(sameBackup)); d != "" {
			t.Errorf("split before line %d: snapshots (-whole +parts):\n%s", i+1, d)
		}
		wantWarning := "line 4: " // read by the scan
		if i <= 3 {
			wantWarning = fmt.Sprintf("the line at byte %d: ", len(strings.Join(lines[:3], "\n"))+1)
		}
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], wantWarning) {
			t.Errorf("split before line %d: warnings %q, want one starting %q", i+1, warnings, wantWarning)
		}
		if i < len(lines) {
			at += len(lines[i]) + 1
		}
	}
}
