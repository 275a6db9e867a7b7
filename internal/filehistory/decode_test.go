package filehistory

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// snapshotLineSlow is what snapReader.line must give: the line read by
// DecodeEntry and DecodeSnapshot.
func snapshotLineSlow(line []byte, dir string) (Snapshot, bool, error) {
	e, err := transcript.DecodeEntry(line)
	if err != nil || e.Type != transcript.TypeFileHistorySnapshot {
		return Snapshot{}, false, nil
	}
	s, _, err := DecodeSnapshot(&e, dir)
	return s, true, err
}

// checkSnapshotLine fails t when r and the general way disagree about
// line.
func checkSnapshotLine(t *testing.T, r *snapReader, line []byte) {
	t.Helper()
	want, wantOK, wantErr := snapshotLineSlow(line, r.dir)
	got, gotOK, gotErr := r.line(line)
	if gotOK != wantOK || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%s:\nok %v, err %v; want ok %v, err %v", line, gotOK, gotErr, wantOK, wantErr)
	}
	if wantErr != nil {
		return
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Fatalf("%s:\nsnapshot (-want +got):\n%s", line, d)
	}
}

// snapshotLineCases are records of the usual shape and of every unusual
// one the fast read must leave to the general way, or read the same.
var snapshotLineCases = []struct {
	line string
	fast bool // read without the general way
}{
	{`{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{"/a/b.go":{"backupFileName":"0123456789abcdef@v1","version":1,"backupTime":"2026-01-02T10:00:01.000Z"},"rel/c.go":{"backupFileName":null,"version":2,"backupTime":"2026-01-02T10:00:02.000Z","realParentDir":"/a"}},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":false}`, true},
	{`{"type":"file-history-snapshot","messageId":"a1","snapshot":{"messageId":"u1","trackedFileBackups":{},"timestamp":"2026-01-02T10:00:00.000Z"},"isSnapshotUpdate":true}`, true},
	{` {"type":"file-history-snapshot","messageId":"u1","snapshot":{"trackedFileBackups":null}} `, true},
	{`{"type":"file-history-snapshot","messageId":"u\u00e9","snapshot":{"trackedFileBackups":{"/a/\u00e9.go":{"backupFileName":"x@v1","version":-0}}}}`, true},
	{`{"type":"file-history-snapshot","snapshot":{"messageId":"u1","trackedFileBackups":{"/a":{"version":1},"/a":{"version":2}}}}`, true},
	{`{"type":"file-history-snapshot","snapshot":{"messageId":"u1","extra":[1,{"x":null}],"trackedFileBackups":{"/a":{"version":null,"backupTime":null,"backupFileName":"n"}}}}`, true},
	// Damaged, each its own way.
	{`{"type":"file-history-snapshot","messageId":"bad","snapshot":{"trackedFileBackups":{"x":{"backupFileName":"../../etc/passwd","version":1}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"bad","snapshot":{"trackedFileBackups":{"/x":{"backupFileName":"..","version":1}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u2","snapshot":{"trackedFileBackups":{"/a/b.go":{"backupFileName":"0123456789abcdef@v1","version":1,"backupTime":"2026-01-02T10:00:01.000Z"},"x":{"backupFileName":"..","version":1}}}}`, false},
	{`{"type":"file-history-snapshot","snapshot":{"trackedFileBackups":{}}}`, false},
	{`{"type":"file-history-snapshot","messageId":3,"snapshot":{"trackedFileBackups":{}}}`, false},
	{`{"type":"file-history-snapshot","messageId":null,"snapshot":{}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":"not an object"}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":null}`, false},
	{`{"type":"file-history-snapshot","messageId":"u"}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":1.0}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":1e2}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":99999999999999999999}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":"1"}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"backupFileName":7}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":null}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":[]}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"timestamp":5}}`, false},
	// Spelt otherwise, or given twice: encoding/json's rules.
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"MessageID":"v","trackedFileBackups":{}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"Version":4,"BACKUPFILENAME":"k"}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":1}},"trackedFileBackups":{"/b":{"version":2}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFileBackups":{"/a":{"version":1,"version":3}}}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"messageId":"a","messageId":"b"}}`, false},
	{`{"type":"file-history-snapshot","type":"file-history-snapshot","messageId":"u","snapshot":{}}`, false},
	{`{"Type":"file-history-snapshot","messageId":"u","snapshot":{}}`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{"trackedFile\u0042ackups":{"/a":{"version":1}}}}`, true},
	{`{"\u0074ype":"file-history-snapshot","messageId":"u","snapshot":{}}`, false},
	{`{"type":"file-history-snapshot","uuid":"x","messageId":"u","snapshot":{}}`, false},
	// Not snapshots.
	{`{"type":"user","message":{"role":"user","content":"\"file-history-snapshot\""}}`, false},
	{`{"type":"file-history-snapshot","messageId":`, false},
	{`{"type":"file-history-snapshot","messageId":"u","snapshot":{}} x`, false},
	{`{"type":7,"snapshot":{}}`, false},
	{`["file-history-snapshot"]`, false},
}

// TestSnapshotLineFast: records of the usual shape are read without
// DecodeEntry and encoding/json, others with them, and every one gives
// what DecodeEntry and DecodeSnapshot give.
func TestSnapshotLineFast(t *testing.T) {
	for _, tc := range snapshotLineCases {
		checkSnapshotLine(t, newSnapReader("/p"), []byte(tc.line))
		if _, fast := newSnapReader("/p").fast([]byte(tc.line)); fast != tc.fast {
			t.Errorf("%s: read fast %v, want %v", tc.line, fast, tc.fast)
		}
	}
	// One reader for all of them, which reuses what it read of the
	// lines before: forwards, backwards, and without a working
	// directory (relative paths are dropped).
	for _, dir := range []string{"/p", ""} {
		r := newSnapReader(dir)
		for range 2 {
			for _, tc := range snapshotLineCases {
				checkSnapshotLine(t, r, []byte(tc.line))
			}
			for i := len(snapshotLineCases) - 1; i >= 0; i-- {
				checkSnapshotLine(t, r, []byte(snapshotLineCases[i].line))
			}
		}
	}
}

func FuzzSnapshotLine(f *testing.F) {
	for _, tc := range snapshotLineCases {
		f.Add([]byte(tc.line))
	}
	// One reader goes on from line to line, as in a Load.
	r := newSnapReader("/p")
	f.Fuzz(func(t *testing.T, line []byte) {
		if !strings.Contains(string(line), "file-history-snapshot") {
			return
		}
		checkSnapshotLine(t, newSnapReader("/p"), line)
		checkSnapshotLine(t, r, line)
	})
}
