package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/sessionmemory"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// storeScript plays a session that leaves a file of every kind beside its
// transcript: the main agent calls Big (a result too large to keep
// inline), then a subagent that calls Big too, then answers; the notes
// agent adds a line to the notes with Edit.
type storeScript struct {
	mu      sync.Mutex
	notes   string // the notes file the Edit names
	updates int
}

func (s *storeScript) respond(r *modeltest.Request) modeltest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case isNotesRequest(r):
		if !startsUpdate(r) {
			return modeltest.Text("Notes updated.")
		}
		s.updates++
		in, _ := json.Marshal(map[string]string{
			"file_path": s.notes, "old_string": worklogLine,
			"new_string": worklogLine + fmt.Sprintf("\n- NOTE-%d: ran Big and a subagent", s.updates),
		})
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_notes_%d", s.updates), "Edit", string(in))}}
	case isChild(r) && !answered(r, "toolu_child"):
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_child", "Big", `{}`)}}
	case isChild(r):
		return modeltest.Text("CHILD-REPORT: the output is all the word output")
	case !answered(r, "toolu_big"):
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_big", "Big", `{}`)}}
	case !answered(r, "toolu_task"):
		return modeltest.Reply{Content: []model.Block{taskCall("toolu_task", subagent.GeneralPurpose, "Look at the output again")}}
	default:
		return modeltest.Text("All done.")
	}
}

// TestSessionOnStore runs one session through the same calls on the file
// store and on the memory store: a large result spilled beside the
// transcript, a subagent with its own transcript and spilled result,
// session notes, then a resume that sees all of it. On the memory store
// nothing of the session reaches the home's projects folder, and the
// working copy the tools used is gone after Close.
func TestSessionOnStore(t *testing.T) {
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
			sc := &storeScript{}
			srv := modeltest.Start(t, modeltest.Config{Respond: sc.respond})
			defs, _ := subagent.Load(subagent.Dirs(home.Dir, cwd)...)
			uuids := counter()
			open := func(resume string) *agent.Agent {
				opts := agent.Options{Home: home, Cwd: cwd, Store: store, Resume: resume, ModelName: "claude-test", MaxTokens: 4000,
					Tools: append([]tool.Tool{tools.NewTask(defs), bigTool{n: 20_000}}, tools.Core()...), Entrypoint: "sdk-cli",
					NewUUID: uuids, DisableAutoCompact: false,
					// Notes only when asked (Summary), so the script is the
					// same on every run.
					SessionMemory: sessionmemory.Config{Thresholds: sessionmemory.Thresholds{Init: 1 << 40, Growth: 1 << 40}},
				}
				return openOn(t, srv, opts, nil)
			}

			a := open("")
			id := a.ID()
			sc.mu.Lock()
			sc.notes = a.NotesPath()
			sc.mu.Unlock()
			runAll(t, a, "start")
			notes, err := a.Summary(ctx)
			if err != nil {
				t.Fatalf("Summary: %v", err)
			}
			if !strings.Contains(notes, "NOTE-1") {
				t.Fatalf("the notes lack the update:\n%s", notes)
			}
			workdir := filepath.Dir(filepath.Dir(a.NotesPath())) // <dir>/session-memory/summary.md
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}

			// Every file of the session is in the store.
			sidecars := store.(transcript.Sidecars)
			names, err := sidecars.ListSidecars(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var agents []string
			for _, n := range names {
				if strings.HasPrefix(n, "subagents/agent-") {
					agents = append(agents, n)
				}
			}
			for _, want := range []string{"tool-results/toolu_big.txt", "tool-results/toolu_child.txt", "session-memory/summary.md"} {
				if !slices.Contains(names, want) {
					t.Errorf("the store lacks %s; it has %q", want, names)
				}
			}
			if len(agents) != 1 {
				t.Fatalf("subagent transcripts %q, want one", agents)
			}
			big, err := sidecars.ReadSidecar(ctx, id, "tool-results/toolu_big.txt")
			if err != nil || !strings.HasPrefix(string(big), "output output") || len(big) < 50_000 {
				t.Errorf("the spilled result: %d bytes, %v", len(big), err)
			}
			stored, err := sidecars.ReadSidecar(ctx, id, "session-memory/summary.md")
			if err != nil || !strings.Contains(string(stored), "NOTE-1") {
				t.Errorf("the stored notes lack the update (%v):\n%s", err, stored)
			}
			logs, _ := transcript.SidecarStore(store, id, agent.SubagentsDir)
			child := transcripttest.ReadAll(t, logs, strings.TrimSuffix(strings.TrimPrefix(agents[0], "subagents/"), ".jsonl"))
			if len(child) == 0 || !child[0].IsSidechain || child[0].SessionID != id {
				t.Errorf("the subagent's transcript: %d entries, first %+v", len(child), child)
			}
			main := transcripttest.ReadAll(t, store, id)
			var persisted bool
			for _, e := range main {
				persisted = persisted || strings.Contains(string(e.Message), "<persisted-output>")
			}
			if !persisted {
				t.Error("the transcript does not hold the spilled result's preview")
			}
			if tc.name == "memory" {
				if _, err := os.Stat(home.Projects()); !os.IsNotExist(err) {
					t.Errorf("the memory store's session wrote to the home's projects folder (%v)", err)
				}
				if _, err := os.Stat(workdir); !os.IsNotExist(err) {
					t.Errorf("the working copy %s is still there after Close (%v)", workdir, err)
				}
			}

			// The resumed session has it all: the conversation, and the
			// notes, which the next update goes on from.
			a = open(id)
			if a.ID() != id {
				t.Fatalf("resumed %s, want %s", a.ID(), id)
			}
			runAll(t, a, "and now?")
			last := srv.Last()
			if !answered(last, "toolu_big") || !answered(last, "toolu_task") || !strings.Contains(string(last.Body), "persisted-output") {
				t.Error("the resumed session's request lacks the earlier turn")
			}
			if a.NotesPath() != sc.notes {
				t.Errorf("the notes moved from %s to %s on resume: the transcript's paths would not lead to them", sc.notes, a.NotesPath())
			}
			// The spilled result is where the preview in the transcript says.
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(a.NotesPath()), "..", "tool-results", "toolu_big.txt")); err != nil || len(b) != len(big) {
				t.Errorf("the spilled result is not where its preview names it after the resume: %d bytes, %v", len(b), err)
			}
			notes, err = a.Summary(ctx)
			if err != nil {
				t.Fatalf("Summary after the resume: %v", err)
			}
			if !strings.Contains(notes, "NOTE-1") || !strings.Contains(notes, "NOTE-2") {
				t.Errorf("the notes after the resume do not go on from the stored ones:\n%s", notes)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			stored, _ = sidecars.ReadSidecar(context.Background(), id, "session-memory/summary.md")
			if !strings.Contains(string(stored), "NOTE-2") {
				t.Errorf("the second update did not reach the store:\n%s", stored)
			}
		})
	}
}
