package agent_test

import (
	"bytes"
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
// snapshots of the whole transcript, in order, whether the load read it
// back to its start (no compaction: the load's own lines give them all)
// or stopped at a compact boundary (those before it are read apart).
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
			var want []string
			for line := range bytes.Lines(buf.Bytes()) {
				out.Write(line)
				if bytes.HasPrefix(line, []byte(`{"type":"last-prompt"`)) {
					id := fmt.Sprintf("m%d", len(want))
					want = append(want, id)
					fmt.Fprintf(&out, `{"type":"file-history-snapshot","messageId":%q,"snapshot":{"messageId":%q,"trackedFileBackups":{},"timestamp":"2026-01-12T10:00:00.000Z"},"isSnapshotUpdate":false}`+"\n", id, id)
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
			a, err := agent.Open(t.Context(), agent.Options{
				Home: home, Cwd: cwd, Store: store, Resume: st.SessionID, Model: m, ModelName: "claude-test",
				MaxTokens: 4000, Entrypoint: "sdk-cli", DisableSessionMemory: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var got []string
			for _, s := range agent.FileSnapshots(a) {
				got = append(got, s.MessageID)
			}
			if len(want) < 3 || !slices.Equal(got, want) {
				t.Errorf("the file history has %d snapshots, want the transcript's %d:\n got %q\nwant %q", len(got), len(want), got, want)
			}
		})
	}
}
