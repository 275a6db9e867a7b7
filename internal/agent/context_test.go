package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// openWith opens a session against srv with the core tools, instruction
// files for cwd, and long-term memory in the project's folder.
func openWith(t *testing.T, srv *modeltest.Server, home session.Home, cwd string, mem *agent.MemoryOptions) *agent.Agent {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if mem != nil {
		mem.Recall, mem.RecallModel = m, "claude-small"
	}
	a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd, Model: m, ModelName: "claude-test", MaxTokens: 4000,
		Tools: tools.Core(), Entrypoint: "sdk-cli", PermissionMode: "bypassPermissions",
		Instructions: instructions.NewTracker(instructions.Options{Cwd: cwd, Home: home.Dir, Managed: []string{}, ManagedRules: []string{}}),
		Memory:       mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func drain(t *testing.T, a *agent.Agent, prompt string) *engine.Result {
	t.Helper()
	var res *engine.Result
	for ev, err := range a.Run(t.Context(), prompt) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == engine.EventDone {
			res = ev.Done
		}
	}
	return res
}

func isRecall(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte("You choose which saved memories"))
}

func readCall(id, path string) model.Block {
	in, _ := json.Marshal(map[string]string{"file_path": path})
	return modeltest.ToolUse(id, "Read", string(in))
}

// TestRecallRunsBesideTheMainRequest: the main request is sent while the
// recall side request is still unanswered, and the memories it picks go
// with the next request of the turn. It measures the time from Run to
// the first main request with 1,000 memories and with none.
func TestRecallRunsBesideTheMainRequest(t *testing.T) {
	for _, n := range []int{0, 1000} {
		t.Run(fmt.Sprint(n, " memories"), func(t *testing.T) {
			home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
			dir := memory.Dir(home, cwd)
			os.MkdirAll(dir, 0o755)
			for i := range n {
				memory.Save(dir, fmt.Sprintf("m%04d.md", i), memory.Memory{Name: fmt.Sprint("m", i), Description: fmt.Sprint("fact ", i), Type: memory.TypeProject, Body: fmt.Sprint("FACT-", i)})
			}
			os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("a\n"), 0o644)
			recallIn := make(chan struct{}) // the side request arrived
			release := make(chan struct{})  // answer it
			recalled := make(chan int, 1)   // the agent has its answer
			var mu sync.Mutex
			var mainAt time.Time
			mains := 0
			srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
				if isRecall(r) {
					close(recallIn)
					<-release
					return modeltest.Text(`{"selected": ["m0999.md"]}`)
				}
				mu.Lock()
				mains++
				k := mains
				if k == 1 {
					mainAt = time.Now()
				}
				mu.Unlock()
				if k == 1 {
					if n > 0 {
						<-recallIn // both requests are in flight at once
						close(release)
						<-recalled
					}
					return modeltest.Reply{Content: []model.Block{readCall("t1", filepath.Join(cwd, "a.txt"))}}
				}
				return modeltest.Text("done")
			}})
			a := openWith(t, srv, home, cwd, &agent.MemoryOptions{Dir: dir, RecallDone: func(k int) { recalled <- k }})
			start := time.Now()
			drain(t, a, "what is fact one?")
			mu.Lock()
			took := mainAt.Sub(start)
			mu.Unlock()
			t.Logf("%d memories: first main request %v after Run", n, took)
			reqs := srv.Requests()
			var main []*modeltest.Request
			for _, r := range reqs {
				if !isRecall(r) {
					main = append(main, r)
				}
			}
			if len(main) != 2 {
				t.Fatalf("%d main requests", len(main))
			}
			if n == 0 {
				if len(reqs) != 2 {
					t.Errorf("an empty memory folder made a side request")
				}
				return
			}
			second := string(main[1].Body)
			if !strings.Contains(second, "FACT-999") || !strings.Contains(second, "Memories saved in earlier sessions") || strings.Contains(string(main[0].Body), "FACT-999") {
				t.Error("the recalled memory did not go with the second request (and only it)")
			}
		})
	}
}

func TestNestedInstructionsAndRules(t *testing.T) {
	home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
	os.MkdirAll(filepath.Join(cwd, "sub", ".claude", "rules"), 0o755)
	os.MkdirAll(filepath.Join(cwd, ".claude", "rules"), 0o755)
	os.WriteFile(filepath.Join(cwd, "CLAUDE.md"), []byte("TOP-MARK"), 0o644)
	os.WriteFile(filepath.Join(cwd, "sub", "CLAUDE.md"), []byte("NESTED-MARK"), 0o644)
	os.WriteFile(filepath.Join(cwd, ".claude", "rules", "go.md"), []byte("---\npaths: [\"**/*.go\"]\n---\nGO-RULE-MARK"), 0o644)
	os.WriteFile(filepath.Join(cwd, "sub", "x.go"), []byte("package x\n"), 0o644)
	os.WriteFile(filepath.Join(cwd, "sub", "y.txt"), []byte("y\n"), 0o644)
	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(
		modeltest.Reply{Content: []model.Block{readCall("t1", filepath.Join(cwd, "sub", "y.txt"))}},
		modeltest.Reply{Content: []model.Block{readCall("t2", filepath.Join(cwd, "sub", "x.go")), readCall("t3", filepath.Join(cwd, "sub", "y.txt"))}},
		modeltest.Text("done"),
	)
	a := openWith(t, srv, home, cwd, nil)
	drain(t, a, "look around")
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	first, second, third := string(reqs[0].Body), string(reqs[1].Body), string(reqs[2].Body)
	if !strings.Contains(first, "TOP-MARK") || strings.Contains(first, "NESTED-MARK") || strings.Contains(first, "GO-RULE-MARK") {
		t.Error("the first request must hold the top file only")
	}
	if strings.Count(second, "NESTED-MARK") != 1 || strings.Contains(second, "GO-RULE-MARK") {
		t.Error("reading sub/y.txt must bring sub/CLAUDE.md, not the Go rule")
	}
	if strings.Count(third, "NESTED-MARK") != 1 || strings.Count(third, "GO-RULE-MARK") != 1 {
		t.Error("reading sub/x.go must bring the Go rule once, and not sub/CLAUDE.md again")
	}
	// They travel inside the result of the read that brought them in.
	msgs := reqs[1].Params.Messages
	res := msgs[len(msgs)-1].Content[0]
	if res.Type != model.BlockToolResult || !bytes.Contains(res.Content, []byte("Contents of "+filepath.Join(cwd, "sub", "CLAUDE.md"))) {
		t.Errorf("the nested file is not in the read's result: %s", res.Content)
	}
}

func TestTokenBudgetKeepsTheTurnGoing(t *testing.T) {
	home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(
		modeltest.Text("First pass."),
		modeltest.Text(strings.Repeat("More work, carefully checked. ", 150)), // about 1,100 output tokens
		modeltest.Text("Complete."),
		modeltest.Text("must not be asked for"),
	)
	a := openWith(t, srv, home, cwd, nil)
	res := drain(t, a, "+10k tidy up the package")
	reqs := srv.Requests()
	if len(reqs) != 3 || res.Text != "Complete." {
		t.Fatalf("%d requests, final %q", len(reqs), res.Text)
	}
	if !strings.Contains(string(reqs[0].Body), "a token budget of 10,000 output tokens") || !strings.Contains(string(reqs[0].Body), "# Token budgets") {
		t.Error("the budget is not stated")
	}
	if !strings.Contains(string(reqs[1].Body), "Token budget: ") || !strings.Contains(string(reqs[1].Body), "of 10,000 output tokens spent") {
		t.Errorf("no nudge: %s", reqs[1].Body)
	}
	// The next prompt has no budget: one request.
	srv.Enqueue(modeltest.Text("Short answer."))
	drain(t, a, "thanks")
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests after a prompt without a budget", n)
	}
}
