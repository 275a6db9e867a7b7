package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// modes is a tools.PlanModes that ends the turn with every plan, as a
// headless run started in plan mode does.
type modes struct {
	mu   sync.Mutex
	plan bool
}

func (m *modes) InPlanMode() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plan
}

func (m *modes) EnterPlanMode(context.Context) error {
	m.mu.Lock()
	m.plan = true
	m.mu.Unlock()
	return nil
}

func (m *modes) ReviewPlan(context.Context, string, string) (tools.PlanReview, error) {
	return tools.PlanReview{EndTurn: true}, nil
}

const thePlan = "# PLAN-MARKER\n\n1. Rename the function.\n2. Update its callers.\n"

// TestPlanSurvivesCompactionAndResume: a plan presented in plan mode ends
// the turn as its result and is saved under the home's plans folder; it
// comes through two compactions verbatim, as Claude Code's
// plan_file_reference, and a resumed session holds it again.
func TestPlanSurvivesCompactionAndResume(t *testing.T) {
	onStores(t, testPlanSurvivesCompactionAndResume)
}

func testPlanSurvivesCompactionAndResume(t *testing.T, k storeKind) {
	home, cwd, store := session.Home{Dir: t.TempDir()}, t.TempDir(), k.store()
	in, _ := json.Marshal(map[string]string{"plan": thePlan})
	var once sync.Once
	srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		if isSummaryRequest(r) {
			return modeltest.Text("<summary>A plan was made.</summary>")
		}
		planned := false
		once.Do(func() { planned = true })
		if planned {
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_plan", "ExitPlanMode", string(in))}}
		}
		return modeltest.Text(strings.Repeat("A long answer. ", 2000))
	}})
	pm := &modes{plan: true}
	open := func(resume bool) *agent.Agent {
		m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd, Store: store, Model: m, ModelName: "claude-test", MaxTokens: 4000,
			Window: tokens.Window{Size: 40_000, MaxOutput: 4_000},
			Tools:  []tool.Tool{tools.Read{}, tools.ExitPlanMode{}, tools.EnterPlanMode{}}, Entrypoint: "sdk-cli",
			PlanModes: pm, Continue: resume, NewUUID: counter()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a := open(false)
	res := drain(t, a, "make a plan")
	if res.Stop != engine.StopTool || res.Text != thePlan {
		t.Fatalf("the turn ended with %q (%s), want the plan", res.Text, res.Stop)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1: the plan ends the turn", n)
	}
	// In plan mode, the prompt tells the model so and names the file.
	path, content := a.Plan()
	if content != thePlan || filepath.Dir(path) != filepath.Join(home.Dir, "plans") || !strings.HasSuffix(path, ".md") {
		t.Fatalf("plan %q at %s", content, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != thePlan {
		t.Fatalf("plan file %q, %v", b, err)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, "Plan mode is on") || !strings.Contains(body, path) {
		t.Errorf("the first request does not say plan mode is on: %s", body)
	}

	// Two compactions, each summarising the plan's call away.
	pm.mu.Lock()
	pm.plan = false
	pm.mu.Unlock()
	for range 2 {
		// Two long answers: the older is summarised, so the compaction
		// frees room.
		drain(t, a, "tell me more")
		drain(t, a, "and more")
		if _, err := a.Compact(t.Context(), ""); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, a, "and now?")
	last := string(srv.Last().Body)
	if strings.Contains(last, "toolu_plan") {
		t.Fatal("the plan's call was not summarised away: the test proves nothing")
	}
	if !strings.Contains(last, "A plan file exists from plan mode at: "+path) || !strings.Contains(last, "2. Update its callers.") {
		t.Errorf("the plan did not survive two compactions: %s", last)
	}
	if strings.Count(last, "PLAN-MARKER") != 1 {
		t.Errorf("the plan is carried %d times", strings.Count(last, "PLAN-MARKER"))
	}
	if strings.Contains(last, "Plan mode is on") {
		t.Error("plan mode's reminder outlived plan mode")
	}
	a.Close()

	// Resumed after the compactions, the session holds the plan again.
	b := open(true)
	if p, c := b.Plan(); p != path || c != thePlan {
		t.Errorf("resumed plan %q at %s, want %q at %s", c, p, thePlan, path)
	}
}

// TestPlanFileStaysInHome: a resumed transcript that names a plan file
// outside the home's plans folder (Claude Code's own, or any path written
// into the transcript) keeps its plan, but the plan tools neither write
// nor read that file: the plan moves into the home's plans folder.
func TestPlanFileStaysInHome(t *testing.T) {
	onStores(t, testPlanFileStaysInHome)
}

func testPlanFileStaysInHome(t *testing.T, k storeKind) {
	home, cwd, store := session.Home{Dir: t.TempDir()}, t.TempDir(), k.store()
	outside := filepath.Join(t.TempDir(), "victim.md")
	if err := os.WriteFile(outside, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]string{"plan": thePlan})
	srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_plan", "ExitPlanMode", string(in))}}
	}})
	pm := &modes{plan: true}
	open := func(resume bool) *agent.Agent {
		m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd, Store: store, Model: m, ModelName: "claude-test", MaxTokens: 4000,
			Window: tokens.Window{Size: 40_000, MaxOutput: 4_000},
			Tools:  []tool.Tool{tools.ExitPlanMode{}}, Entrypoint: "sdk-cli",
			PlanModes: pm, Continue: resume, NewUUID: counter()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a := open(false)
	drain(t, a, "make a plan")
	path, _ := a.Plan()
	a.Close()
	// The transcript now names a file outside the home as the plan's.
	b := stored(t, a)
	if !strings.Contains(string(b), `"filePath":"`+path+`"`) {
		t.Fatalf("the transcript does not record the plan's file %s", path)
	}
	tampered := []byte(strings.ReplaceAll(string(b), `"filePath":"`+path+`"`, `"filePath":"`+outside+`"`))
	if k == onFile {
		if err := os.WriteFile(a.Path(), tampered, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		mem := transcript.NewMemStore()
		mem.AppendRaw(a.ID(), tampered)
		store = mem
	}
	r := open(true)
	if p, c := r.Plan(); filepath.Dir(p) != filepath.Join(home.Dir, "plans") || c != thePlan {
		t.Errorf("resumed plan %q at %s, want it in %s", c, p, filepath.Join(home.Dir, "plans"))
	}
	drain(t, r, "present it again")
	if b, _ := os.ReadFile(outside); string(b) != "SECRET\n" {
		t.Errorf("the plan was written outside the home, to %s: %q", outside, b)
	}
}
