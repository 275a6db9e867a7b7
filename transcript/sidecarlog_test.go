package transcript_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// TestSidecarStore writes a subagent's transcript through the line-log
// store of a session's sidecar files, on the memory store (rewritten
// through WriteSidecar) and the file store (a FileStore over the folder),
// and reads it back both ways.
func TestSidecarStore(t *testing.T) {
	const parent = "5b0d5a1e-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) transcript.Store
	}{
		{"memory", func(*testing.T) transcript.Store { return transcript.NewMemStore() }},
		{"file", func(t *testing.T) transcript.Store { return transcript.NewFileStore(t.TempDir()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.store(t)
			logs, ok := transcript.SidecarStore(s, parent, "subagents")
			if !ok {
				t.Fatal("no sidecar store")
			}
			a, err := logs.OpenAppender(ctx, "agent-a1")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := logs.OpenAppender(ctx, "agent-a1"); !errors.Is(err, transcript.ErrLocked) {
				t.Errorf("second appender: %v, want ErrLocked", err)
			}
			want := transcripttest.Entries(parent, 4)
			for _, batch := range [][]transcript.Entry{want[:1], want[1:3], want[3:]} {
				if err := a.Append(ctx, batch, true); err != nil {
					t.Fatal(err)
				}
			}
			a.Close()
			got := transcripttest.ReadAll(t, logs, "agent-a1")
			if diff := cmp.Diff(len(want), len(got)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			names, err := s.(transcript.Sidecars).ListSidecars(ctx, parent)
			if err != nil || !cmp.Equal(names, []string{"subagents/agent-a1.jsonl"}) {
				t.Errorf("the session's sidecar files: %q, %v", names, err)
			}
			infos, err := logs.Sessions(ctx)
			if err != nil || len(infos) != 1 || infos[0].ID != "agent-a1" {
				t.Errorf("Sessions = %+v, %v", infos, err)
			}
			if fs, ok := s.(*transcript.FileStore); ok {
				if _, err := transcript.OpenFile(filepath.Join(fs.SidecarDir(parent), "subagents", "agent-a1.jsonl")); err != nil {
					t.Errorf("the file store's log is not where Claude Code keeps it: %v", err)
				}
			}
			// A reopened appender goes on after what is there.
			a, err = logs.OpenAppender(ctx, "agent-a1")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Append(ctx, transcripttest.Entries(parent, 6)[4:], false); err != nil {
				t.Fatal(err)
			}
			a.Close()
			if n := len(transcripttest.ReadAll(t, logs, "agent-a1")); n != 6 {
				t.Errorf("after a second appender, %d entries, want 6", n)
			}
		})
	}
	if _, ok := transcript.SidecarStore(transcript.NewMemStore(), parent, "../x"); ok {
		t.Error("a folder name that leaves the session's folder was accepted")
	}
}
