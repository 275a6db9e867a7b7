package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/session"
)

// TestResumeReadsEverySnapshot: a resumed session's file history has the
// snapshots of the whole transcript, in order, with their files and
// versions, whether the load read it back to its start (no compaction)
// or stopped at a compact boundary (those before it are read apart, past
// Open): with a snapshot on the first line and a later update of it,
// which the load's reading on for its cache applies too, and with Open's
// context ended as soon as it returns, as the UI's /resume ends it.
func TestResumeReadsEverySnapshot(t *testing.T) {
	for _, o := range []gen.Options{
		{Size: 1 << 20, Seed: 21},
		{Size: 2 << 20, Seed: 22, CompactEvery: 512 << 10},
	} {
		t.Run(fmt.Sprintf("compactions=%v", o.CompactEvery > 0), func(t *testing.T) {
			home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
			store := home.Store(cwd)
			var buf, out bytes.Buffer
			st, err := gen.Generate(&buf, o)
			if err != nil {
				t.Fatal(err)
			}
			if o.CompactEvery > 0 && st.Compactions == 0 {
				t.Fatal("the generator made no compaction")
			}
			snap := func(id string, version int, update bool) {
				fmt.Fprintf(&out, `{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{"/p/a.go":{"backupFileName":null,"version":%d,"backupTime":"2026-01-12T10:00:00.000Z"}},"timestamp":"2026-01-12T10:00:00.000Z"},"isSnapshotUpdate":%v}`+"\n", id, id, version, update)
			}
			snap("m0", 1, false)
			want := []string{"m0"}
			for line := range bytes.Lines(buf.Bytes()) {
				out.Write(line)
				if bytes.HasPrefix(line, []byte(`{"type":"last-prompt"`)) {
					if len(want) == 1 {
						snap("m0", 2, true) // the first one's update
					}
					id := fmt.Sprintf("m%d", len(want))
					want = append(want, id)
					snap(id, 2+len(want), false)
				}
			}
			path := store.Path(st.SessionID)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := anthropic.New(anthropic.Config{BaseURL: "http://127.0.0.1:1", APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			a, err := agent.Open(ctx, agent.Options{
				Home: home, Cwd: cwd, Store: store, Resume: st.SessionID, Model: m, ModelName: "claude-test",
				MaxTokens: 4000, Entrypoint: "sdk-cli", DisableSessionMemory: true,
			})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var got []string
			snaps := agent.FileSnapshots(a)
			for _, s := range snaps {
				got = append(got, s.MessageID)
			}
			if len(want) < 3 || !slices.Equal(got, want) {
				t.Fatalf("the file history has %d snapshots, want the transcript's %d:\n got %q\nwant %q", len(got), len(want), got, want)
			}
			for i, s := range snaps {
				wantVersion := 2 + i + 1
				if i == 0 {
					wantVersion = 2 // the update
				}
				if v := s.Files["/p/a.go"].Version; v != wantVersion {
					t.Errorf("%s has /p/a.go at version %d, want %d", s.MessageID, v, wantVersion)
				}
			}
		})
	}
}
