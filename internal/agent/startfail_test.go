package agent_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// TestFailedStartClosesWhatItOpened: a start that fails after it took the
// transcript, made the session's folder and opened the file history (two
// tools of one name fail it late) leaves nothing behind: no empty
// transcript, so the same session id starts again; no working copy; the
// session's lock free for the next run.
func TestFailedStartClosesWhatItOpened(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(home session.Home, cwd string) transcript.Store
	}{
		{"file", func(home session.Home, cwd string) transcript.Store { return home.Store(cwd) }},
		{"memory", func(session.Home, string) transcript.Store { return transcript.NewMemStore() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
			store := tc.store(home, cwd)
			srv := modeltest.Start(t, modeltest.Config{Default: modeltest.Text("ok")})
			id := uuid.NewString()
			dup := append(tools.Core(), bigTool{n: 1}, bigTool{n: 1})
			opts := func(ts []tool.Tool, resume string) agent.Options {
				o := agent.Options{Home: home, Cwd: cwd, Store: store, ModelName: "claude-test", MaxTokens: 4000,
					Tools: ts, Entrypoint: "sdk-cli", DisableSessionMemory: true, Resume: resume}
				if resume == "" {
					o.SessionID = id
				}
				return o
			}
			left := func(when, id string) {
				t.Helper()
				if src, err := store.OpenSource(ctx, id); !errors.Is(err, transcript.ErrNotFound) {
					if src != nil {
						src.Close()
					}
					t.Errorf("%s: the transcript is still there (%v)", when, err)
				}
				folders := []string{transcript.SidecarDir(store, id)}
				if folders[0] == "" { // the working copy, <store tag>-<id>
					folders, _ = filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("cairn-%d-sessions", os.Getuid()), "*-"+id))
				}
				for _, folder := range folders {
					if _, err := os.Stat(folder); !os.IsNotExist(err) {
						t.Errorf("%s: the session's folder %s is still there (%v)", when, folder, err)
					}
				}
			}

			if _, err := openOnErr(srv, opts(dup, "")); err == nil {
				t.Fatal("a session with two tools of one name started")
			}
			left("after a failed start", id)
			a, err := openOnErr(srv, opts(tools.Core(), ""))
			if err != nil {
				t.Fatalf("the session could not start after a failed start: %v", err)
			}
			runAll(t, a, "hello")
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}

			// A failed resume lets go of the session too.
			if _, err := openOnErr(srv, opts(dup, id)); err == nil {
				t.Fatal("a resume with two tools of one name started")
			}
			// A failed fork leaves no transcript of its own.
			forkOpts := opts(dup, id)
			forkOpts.Fork, forkOpts.NewUUID = true, func() string { return "00000000-0000-4000-8000-00000000f0c1" }
			if _, err := openOnErr(srv, forkOpts); err == nil {
				t.Fatal("a fork with two tools of one name started")
			}
			left("after a failed fork", "00000000-0000-4000-8000-00000000f0c1")
			a, err = openOnErr(srv, opts(tools.Core(), id))
			if err != nil {
				t.Fatalf("the session could not be resumed after a failed resume: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
