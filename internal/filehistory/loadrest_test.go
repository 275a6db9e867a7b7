package filehistory

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/transcript"
)

// TestLoadRestMatchesLoad: the snapshots a resume reads (the load's own
// snapshot lines, LoadOptions.Raw, and the file before them, LoadRest) are
// those of reading the whole file, on the generator's sessions with a
// snapshot and an update every few lines: clean, compacted, of short
// lines, and damaged (garbage, a 20 MB line, a torn last line), loaded
// with a cache as a resume loads.
func TestLoadRestMatchesLoad(t *testing.T) {
	shapes := map[string]gen.Options{
		"clean":     {Size: 2 << 20, Seed: 31},
		"compacted": {Size: 3 << 20, Seed: 32, CompactEvery: 512 << 10},
		"terse":     {Size: 2 << 20, Seed: 33, Terse: true},
		"damaged":   {Size: 2 << 20, Seed: 34},
	}
	for name, o := range shapes {
		t.Run(name, func(t *testing.T) {
			if name == "damaged" && testing.Short() {
				t.Skip("writes a 20 MB line")
			}
			var b bytes.Buffer
			if _, err := gen.Generate(&b, o); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			snap := func(id string, n int, update bool) {
				fmt.Fprintf(&out, `{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{"/p/f%d.go":{"backupFileName":"0123456789abcdef@v%d","version":%d,"backupTime":"2026-01-12T10:00:00.000Z"}},"timestamp":"2026-01-12T10:00:00.000Z"},"isSnapshotUpdate":%v}`+"\n", id, id, n%7, n, n, update)
			}
			snap("m0", 0, false) // the first line, as Claude Code writes it
			n := 0
			for line := range bytes.Lines(b.Bytes()) {
				out.Write(line)
				if n++; n%5 == 0 {
					snap(fmt.Sprintf("m%d", n/10), n, n%10 != 0)
				}
			}
			data := out.Bytes()
			if name == "damaged" {
				data = gen.Damage(data)
			}
			want, _, err := Load(t.Context(), bytes.NewReader(data), "/p")
			if err != nil {
				t.Fatal(err)
			}
			conv, err := transcript.Load(t.Context(), transcript.BytesSource(data), transcript.LoadOptions{
				Cache: &transcript.LineCache{}, Raw: []string{transcript.TypeFileHistorySnapshot}})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := LoadRest(t.Context(), bytes.NewReader(data[:conv.RawFrom]), conv.Raw, "/p")
			if err != nil {
				t.Fatal(err)
			}
			if len(want) < 10 {
				t.Fatalf("only %d snapshots in the file", len(want))
			}
			if d := cmp.Diff(want, got, cmp.Comparer(sameBackup)); d != "" {
				t.Errorf("RawFrom %d of %d bytes, %d raw lines: snapshots (-whole +parts):\n%s", conv.RawFrom, len(data), len(conv.Raw), d)
			}
		})
	}
}
