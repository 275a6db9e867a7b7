package agent_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// bigTool answers every call with about n tokens of output.
type bigTool struct{ n int }

func (b bigTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Big", Description: "prints a lot", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (bigTool) ReadOnly(json.RawMessage) bool        { return true }
func (bigTool) Destructive(json.RawMessage) bool     { return false }
func (bigTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (b bigTool) Run(ctx context.Context, _ *tool.Env, in json.RawMessage) (tool.Result, error) {
	return tool.Text(strings.Repeat("output ", b.n*4/7)), nil
}

// script answers a long task: `steps` tool calls, then a final answer; a
// summary request gets a summary naming how many requests came before.
type script struct {
	mu        sync.Mutex
	steps     int
	calls     int
	summaries int
	fail      int // summary requests to fail with a 500
	// answer, when set, is the final reply instead of "All done."
	answer string
	// onSummary, when set, runs as each summary request is answered.
	onSummary func()
}

func isSummaryRequest(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte("Wrap the summary in <summary></summary>")) || bytes.Contains(r.Body, []byte("Wrap it in <summary></summary>"))
}

func (s *script) respond(r *modeltest.Request) modeltest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if isSummaryRequest(r) {
		if s.fail > 0 {
			s.fail--
			return modeltest.Error(500)
		}
		s.summaries++
		if s.onSummary != nil {
			s.onSummary()
		}
		return modeltest.Text(fmt.Sprintf("<summary>SUMMARY-%d: the user wants the PLANTED-FACT kept.</summary>", s.summaries))
	}
	if s.calls < s.steps {
		s.calls++
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_%d", s.calls), "Big", `{}`)}}
	}
	return modeltest.Text(cmp.Or(s.answer, "All done."))
}

type rig struct {
	srv   *modeltest.Server
	home  session.Home
	cwd   string
	store transcript.Store // nil: the home's file store
	sc    *script
}

func newRig(t *testing.T, k storeKind, window int64, sc *script) *rig {
	t.Helper()
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: sc}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: window, Respond: sc.respond})
	return r
}

func (r *rig) open(t *testing.T, w tokens.Window, o func(*agent.Options)) *agent.Agent {
	t.Helper()
	opts := agent.Options{Home: r.home, Cwd: r.cwd, Store: r.store, ModelName: "claude-test", MaxTokens: 4000, Window: w,
		Tools: []tool.Tool{bigTool{n: 2000}}, Entrypoint: "sdk-cli"}
	return openOn(t, r.srv, opts, o)
}

func run(t *testing.T, a *agent.Agent, prompt string) (compactions []*engine.Compaction, notices []string, err error) {
	t.Helper()
	for ev, e := range a.Run(t.Context(), prompt) {
		if e != nil {
			return compactions, notices, e
		}
		switch ev.Type {
		case engine.EventCompact:
			compactions = append(compactions, ev.Compaction)
		case engine.EventNotice:
			notices = append(notices, ev.Text)
		}
	}
	return compactions, notices, nil
}

func TestAutoCompaction(t *testing.T) {
	onStores(t, testAutoCompaction)
}

func testAutoCompaction(t *testing.T, k storeKind) {
	sc := &script{steps: 30}
	r := newRig(t, k, 40_000, sc)
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // compacts at 23,000
	a := r.open(t, w, nil)
	compactions, notices, err := run(t, a, "PLANTED-FACT: please run Big many times")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) < 2 {
		t.Fatalf("%d compactions over 30 big steps in a 40K window", len(compactions))
	}
	for _, req := range r.srv.Requests() {
		if req.Status != 200 {
			t.Errorf("request %s answered %d: every request must fit", req.ID, req.Status)
		}
	}
	// The summary request shares the conversation's cache prefix.
	for i, req := range r.srv.Requests() {
		if isSummaryRequest(req) && req.Usage.CacheReadInputTokens == 0 {
			t.Errorf("summary request %d read nothing from the cache: %+v", i, req.Usage)
		}
	}
	// The user's words survive every compaction, verbatim.
	last := r.srv.Last()
	if !bytes.Contains(last.Body, []byte("PLANTED-FACT: please run Big many times")) {
		t.Error("the user's request did not survive the compactions verbatim")
	}
	// The live history is what a resume loads.
	conv, err := a.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := encode(t, conv.Messages()), encode(t, a.History()); got != want {
		t.Errorf("resumed view differs from the live history after compaction")
	}
	if n := bytes.Count(stored(t, a), []byte(`"subtype":"compact_boundary"`)); n != len(compactions) {
		t.Errorf("%d boundaries stored, %d compactions reported", n, len(compactions))
	}
}

func TestPromptTooLongIsCompactedAndRetried(t *testing.T) {
	onStores(t, testPromptTooLongIsCompactedAndRetried)
}

func testPromptTooLongIsCompactedAndRetried(t *testing.T, k storeKind) {
	sc := &script{steps: 8}
	// The server's window is smaller than the one cairn believes in:
	// cairn's threshold is never reached, the server refuses.
	r := newRig(t, k, 14_000, sc)
	a := r.open(t, tokens.Window{Size: 100_000, MaxOutput: 4_000}, nil)
	compactions, notices, err := run(t, a, "go")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction after a prompt-too-long refusal")
	}
	if !strings.Contains(strings.Join(notices, "\n"), "did not fit") {
		t.Errorf("notices %q", notices)
	}
}

func TestSummaryFailuresTripTheBreakerAndStillFit(t *testing.T) {
	onStores(t, testSummaryFailuresTripTheBreakerAndStillFit)
}

func testSummaryFailuresTripTheBreakerAndStillFit(t *testing.T, k storeKind) {
	sc := &script{steps: 20, fail: 100}
	r := newRig(t, k, 40_000, sc)
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, nil)
	_, notices, err := run(t, a, "go")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	all := strings.Join(notices, "\n")
	if !strings.Contains(all, "off for this session") {
		t.Errorf("no circuit-breaker notice in %q", all)
	}
}

func TestResumeOfAnOversizedTranscript(t *testing.T) {
	onStores(t, testResumeOfAnOversizedTranscript)
}

func testResumeOfAnOversizedTranscript(t *testing.T, k storeKind) {
	sc := &script{steps: 40}
	r := newRig(t, k, 0, sc) // no server limit while the transcript grows
	big := r.open(t, tokens.Window{Size: 1_000_000, MaxOutput: 4_000}, func(o *agent.Options) { o.Tools = []tool.Tool{bigTool{n: 6_000}} })
	if _, _, err := run(t, big, "grow"); err != nil {
		t.Fatal(err)
	}
	big.Close()
	size := tokens.EstimateMessages(big.History())
	grown, grownStore := r.home.Dir, r.store
	for _, times := range []float64{1.5, 3, 10} {
		t.Run(fmt.Sprintf("%gx the window", times), func(t *testing.T) {
			// Each resumes its own copy of the grown session, with a
			// window that many times smaller than its content.
			r.home.Dir = t.TempDir()
			if err := os.CopyFS(r.home.Dir, os.DirFS(grown)); err != nil {
				t.Fatal(err)
			}
			if grownStore != nil {
				r.store = copyStore(t, grownStore)
			}
			window := int64(float64(size) / times)
			r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: window, Respond: sc.respond})
			sc.steps, sc.calls = 0, 0
			a := r.open(t, tokens.Window{Size: window, MaxOutput: 4_000}, func(o *agent.Options) { o.Continue = true })
			compactions, notices, err := run(t, a, "and now?")
			if err != nil {
				t.Fatalf("resume at %gx the window: %v (notices %q)", times, err, notices)
			}
			if len(compactions) == 0 {
				t.Error("no compaction, yet the session did not fit")
			}
			t.Logf("%d compactions, %d requests, notices %q", len(compactions), len(r.srv.Requests()), notices)
			for _, req := range r.srv.Requests() {
				if !isSummaryRequest(req) && req.Status != 200 {
					t.Errorf("request %s answered %d", req.ID, req.Status)
				}
			}
			if last := r.srv.Last(); last.Status != 200 || !bytes.Contains(last.Body, []byte("and now?")) {
				t.Errorf("the last request (%d) does not carry the prompt", last.Status)
			}
		})
	}
}

func encode(t *testing.T, msgs []model.Message) string {
	var b bytes.Buffer
	for _, m := range msgs {
		enc, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(enc)
	}
	return b.String()
}

var _ = filepath.Join
var _ = transcript.TypeUser

// TestAutoCompactionFollowsInstructionFiles: a "# Compact instructions"
// section of the project's CLAUDE.md is part of every summary request's
// instruction, not only of a /compact the user types.
func TestAutoCompactionFollowsInstructionFiles(t *testing.T) {
	onStores(t, testAutoCompactionFollowsInstructionFiles)
}

func testAutoCompactionFollowsInstructionFiles(t *testing.T, k storeKind) {
	sc := &script{steps: 16}
	r := newRig(t, k, 40_000, sc)
	claude := "# Build\nRun make.\n\n# Compact instructions\nKeep the ZEBRA-7 code in every summary.\n\n# Style\nTabs.\n"
	if err := os.WriteFile(filepath.Join(r.cwd, "CLAUDE.md"), []byte(claude), 0o644); err != nil {
		t.Fatal(err)
	}
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Instructions = instructions.NewTracker(instructions.Options{Cwd: r.cwd, Home: r.home.Dir, Managed: []string{}, ManagedRules: []string{}})
	})
	compactions, _, err := run(t, a, "run Big many times")
	if err != nil || len(compactions) == 0 {
		t.Fatalf("%d compactions, %v", len(compactions), err)
	}
	for _, req := range r.srv.Requests() {
		if !isSummaryRequest(req) {
			continue
		}
		msgs := req.Params.Messages
		last := msgs[len(msgs)-1].Content
		instr := last[len(last)-1].Text
		if !strings.Contains(instr, "Additional instructions for this summary:\n# Compact instructions\nKeep the ZEBRA-7 code in every summary.") || strings.Contains(instr, "Tabs.") {
			t.Errorf("the summary instruction does not carry the section alone:\n%s", instr)
		}
		return
	}
	t.Fatal("no summary request")
}

// TestCompactionRefreshesTheMemoryIndex: the memory index in the system
// prompt keeps its bytes while the session runs, and shows what was saved
// meanwhile from the first request after a compaction.
func TestCompactionRefreshesTheMemoryIndex(t *testing.T) {
	onStores(t, testCompactionRefreshesTheMemoryIndex)
}

func testCompactionRefreshesTheMemoryIndex(t *testing.T, k storeKind) {
	// Answers long enough for a compaction to free room.
	r := newRig(t, k, 0, &script{answer: strings.Repeat("A long answer. ", 6500)})
	dir := memory.Dir(r.home, r.cwd)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	index := func(text string) {
		if err := memory.WriteIndex(dir, text); err != nil {
			t.Fatal(err)
		}
	}
	index("- [old](old.md) — OLD-INDEX\n")
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, func(o *agent.Options) { o.Memory = &agent.MemoryOptions{Dir: dir} })
	system := func() string {
		var b strings.Builder
		for _, s := range r.srv.Last().Params.System {
			b.WriteString(s.Text)
		}
		return b.String()
	}
	runAll(t, a, "first")
	index("- [new](new.md) — NEW-INDEX\n")
	runAll(t, a, "second")
	if s := system(); !strings.Contains(s, "OLD-INDEX") || strings.Contains(s, "NEW-INDEX") {
		t.Fatal("the memory index changed mid-session: the cached prefix would break")
	}
	if _, err := a.Compact(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	runAll(t, a, "third")
	if s := system(); !strings.Contains(s, "NEW-INDEX") {
		t.Error("the first request after the compaction does not show the memory index as it stands")
	}
}

// openOn opens a session on the fake server srv with opts, changed by o
// when set; the session closes when the test ends.
func openOn(t *testing.T, srv *modeltest.Server, opts agent.Options, o func(*agent.Options)) *agent.Agent {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Model = m
	if o != nil {
		o(&opts)
	}
	a, err := agent.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}
