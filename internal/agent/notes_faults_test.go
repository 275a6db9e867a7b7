package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// outTool prints about 6 KB for step n; the outputs of the fact steps
// carry the line FACT-<n>=v<n> in their middle.
type outTool struct{ facts map[int]bool }

func (outTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Out", Description: "prints a step's output", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
}
func (outTool) ReadOnly(json.RawMessage) bool        { return true }
func (outTool) Destructive(json.RawMessage) bool     { return false }
func (outTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (o outTool) Run(_ context.Context, _ *tool.Env, in json.RawMessage) (tool.Result, error) {
	var a struct{ N int }
	if err := json.Unmarshal(in, &a); err != nil {
		return tool.Errorf("bad input: %v", err), nil
	}
	var b strings.Builder
	for i := range 120 {
		if i == 60 && o.facts[a.N] {
			fmt.Fprintf(&b, "%s\n", factLine(a.N))
		}
		fmt.Fprintf(&b, "step %03d line %03d: nothing to keep in this line\n", a.N, i)
	}
	return tool.Text(b.String()), nil
}

func factLine(n int) string { return fmt.Sprintf("FACT-%d=v%d", n, n*7919%10000) }

var factLineRE = regexp.MustCompile(`FACT-[0-9]+=v[0-9]+`)

// factsIn are the fact lines in text, each once.
func factsIn(text []byte) map[string]bool {
	out := map[string]bool{}
	for _, f := range factLineRE.FindAll(text, -1) {
		out[string(f)] = true
	}
	return out
}

// faultModel is the scripted model of the fault tests: the main
// conversation calls Out for steps 1..steps and then answers; notes
// updates and summaries are answered by extractive oracles (every fact
// line shown is kept) unless the test's faults say otherwise.
type faultModel struct {
	steps int
	// notesFault answers update number n (from 1) instead of the oracle
	// when it returns true; summaryFault the same for summary requests.
	notesFault   func(n int) (modeltest.Reply, bool)
	summaryFault func(n int) (modeltest.Reply, bool)

	mu        sync.Mutex
	calls     int
	updates   int
	summaries int
}

var notesFileRE = regexp.MustCompile(`Update the notes file (\S+) so`)

func (f *faultModel) respond(r *modeltest.Request) modeltest.Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case isSummaryRequest(r):
		f.summaries++
		if f.summaryFault != nil {
			if reply, ok := f.summaryFault(f.summaries); ok {
				return reply
			}
		}
		var facts []string
		for l := range factsIn(r.SeenJSON()) {
			facts = append(facts, l)
		}
		return modeltest.Text("<summary>The user wants every FACT line kept. Found so far: " + strings.Join(facts, ", ") + "</summary>")
	case isNotesRequest(r):
		if !startsUpdate(r) {
			return modeltest.Text("Notes updated.")
		}
		f.updates++
		if f.notesFault != nil {
			if reply, ok := f.notesFault(f.updates); ok {
				return reply
			}
		}
		m := notesFileRE.FindSubmatch(r.Body)
		msgs := r.Params.Messages
		last := msgs[len(msgs)-1].Content
		instr := last[len(last)-1].Text
		current, _, _ := strings.Cut(instr[strings.Index(instr, "<current-notes>"):], "</current-notes>")
		have := factsIn([]byte(current))
		text := fmt.Sprintf("- update %d", f.updates)
		for l := range factsIn(r.SeenJSON()) {
			if !have[l] {
				text += "\n" + l
			}
		}
		in, _ := json.Marshal(map[string]string{"file_path": string(m[1]), "old_string": worklogLine, "new_string": worklogLine + "\n" + text})
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_notes_%d", f.updates), "Edit", string(in))}}
	}
	if f.calls < f.steps {
		f.calls++
		return modeltest.Reply{Content: []model.Block{model.TextBlock(fmt.Sprintf("Step %d.", f.calls)),
			modeltest.ToolUse(fmt.Sprintf("toolu_out_%d", f.calls), "Out", fmt.Sprintf(`{"n":%d}`, f.calls))}}
	}
	return modeltest.Text("All done.")
}

// faultRun is what a fault test's session left.
type faultRun struct {
	srv      *modeltest.Server
	lines    []string // warnings and notices, in order
	facts    []string // planted
	cwd      string
	notesReq []*modeltest.Request
}

// runFaults runs a 40-step session in a 60,000-token window (auto-
// compaction at about 43,000, early compaction to the notes at 12,000,
// the notes' batch at 9,600) with fm answering, notes updates and
// summaries bounded by the timeouts given, and checks what every
// fault must leave: the session finished, no request of the
// conversation was refused as too long, and every planted fact is
// visible to the model in the last request.
func runFaults(t *testing.T, k storeKind, fm *faultModel, notesTimeout, summaryTimeout time.Duration) *faultRun {
	t.Helper()
	facts := map[int]bool{3: true, 9: true, 16: true, 22: true, 29: true, 35: true}
	fm.steps = 40
	fr := &faultRun{cwd: t.TempDir()}
	for n := range facts {
		fr.facts = append(fr.facts, factLine(n))
	}
	fr.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 60_000, Respond: fm.respond})
	var mu sync.Mutex
	r := &rig{srv: fr.srv, home: session.Home{Dir: t.TempDir()}, cwd: fr.cwd, store: k.store()}
	a := r.open(t, tokens.Window{Size: 60_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = []tool.Tool{outTool{facts}, tools.Read{}, tools.Edit{}, tools.Bash{}}
		o.EarlyCompactAt = 12_000
		o.SummaryTimeout = summaryTimeout
		o.SessionMemory.Timeout = notesTimeout
		o.SessionMemory.Wait = 2 * time.Second
		o.Warn = func(w string) { mu.Lock(); fr.lines = append(fr.lines, w); mu.Unlock() }
	})
	_, notices, err := run(t, a, "Go through the 40 steps. Keep every FACT line you see; report them all at the end.")
	a.Close()
	mu.Lock()
	fr.lines = append(fr.lines, notices...)
	mu.Unlock()
	if err != nil {
		t.Fatalf("the session must go on: %v (said %q)", err, fr.lines)
	}
	var last *modeltest.Request
	for _, req := range fr.srv.Requests() {
		switch {
		case isNotesRequest(req):
			fr.notesReq = append(fr.notesReq, req)
		case isSummaryRequest(req):
		case req.Status != 200:
			t.Errorf("request %s of the conversation answered %d (%d tokens): none may be refused", req.ID, req.Status, req.Tokens)
		default:
			last = req
		}
	}
	if last == nil || !strings.Contains(string(last.Body), "toolu_out_40") {
		t.Fatalf("the session did not reach its last step")
	}
	sys, _ := json.Marshal(last.Params.System)
	seen := factsIn(append(sys, last.SeenJSON()...))
	for _, f := range fr.facts {
		if !seen[f] {
			t.Errorf("%s is not visible in the last request: it was dropped without being captured (said %q)", f, fr.lines)
		}
	}
	return fr
}

// said returns the lines that contain want.
func (fr *faultRun) said(want string) []string {
	var out []string
	for _, l := range fr.lines {
		if strings.Contains(l, want) {
			out = append(out, l)
		}
	}
	return out
}

// TestNotesUpdateFaults: the first notes update works, every later one
// fails — an HTTP 500, a timeout, an empty reply, text without an Edit.
// The session goes on (the early compaction waits for notes that cover
// the conversation, and compaction at the threshold summarises instead),
// nothing is dropped that the notes or a summary did not capture, and
// one line says what happened.
func TestNotesUpdateFaults(t *testing.T) {
	onStores(t, testNotesUpdateFaults)
}

func testNotesUpdateFaults(t *testing.T, k storeKind) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	for _, tt := range []struct {
		name    string
		reply   modeltest.Reply
		want    string
		timeout time.Duration
	}{
		{"HTTP 500", modeltest.Error(500), "500", time.Minute},
		// Even the first, good update may run out of time on a loaded
		// machine: the notes then stand for nothing, and the facts survive
		// through summaries.
		{"times out", modeltest.Reply{Content: []model.Block{model.TextBlock("thinking about it")}, Hold: never, HoldAfter: 2}, "took longer than", 300 * time.Millisecond},
		{"empty reply", modeltest.Reply{Content: []model.Block{}}, "without editing the notes", time.Minute},
		{"text without an Edit", modeltest.Text("The notes are up to date."), "without editing the notes", time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fm := &faultModel{notesFault: func(n int) (modeltest.Reply, bool) { return tt.reply, n > 1 }}
			fr := runFaults(t, k, fm, tt.timeout, time.Minute)
			if got := fr.said("session notes:"); len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("lines about the notes %q: want one, saying %q", got, tt.want)
			}
			if fm.updates < 3 {
				t.Errorf("%d updates tried: the faults were not exercised", fm.updates)
			}
		})
	}
}

// TestNotesUpdateCallsOtherTools: a model that ignores the notes
// instruction and runs a command instead is refused: the command does
// not run, the refusal is the tool's result, and the update counts as
// failed (it captured nothing).
func TestNotesUpdateCallsOtherTools(t *testing.T) {
	onStores(t, testNotesUpdateCallsOtherTools)
}

func testNotesUpdateCallsOtherTools(t *testing.T, k storeKind) {
	cwd := t.TempDir()
	// The command does create the file when Bash does run it.
	probe := filepath.Join(cwd, "probe")
	if _, err := (tools.Bash{}).Run(t.Context(), tool.NewEnv(cwd), json.RawMessage(fmt.Sprintf(`{"command":"touch %s"}`, probe))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(probe); err != nil {
		t.Fatalf("Bash does not run here: %v", err)
	}
	pwned := filepath.Join(cwd, "pwned")
	call := modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_bash", "Bash", fmt.Sprintf(`{"command":"touch %s"}`, pwned))}}
	fm := &faultModel{notesFault: func(n int) (modeltest.Reply, bool) { return call, n > 1 }}
	fr := runFaults(t, k, fm, time.Minute, time.Minute)
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the notes update ran Bash")
	}
	refused := false
	for _, req := range fr.notesReq {
		if strings.Contains(string(req.Body), `"tool_use_id":"toolu_bash"`) && strings.Contains(string(req.Body), "Bash is not allowed") {
			refused = true
		}
	}
	if !refused {
		t.Error("no notes request carries the refusal of the Bash call")
	}
	if got := fr.said("session notes:"); len(got) != 1 || !strings.Contains(got[0], "without editing the notes") {
		t.Errorf("lines about the notes %q: want one", got)
	}
}

// TestSummaryFaultsWithEarlyCompaction: the notes never work, so the
// compaction at the threshold needs a summary, and the first summary
// fails — an HTTP 500, a timeout, an empty summary. The session goes on,
// the next attempt summarises, and every fact survives; one line says
// what happened.
func TestSummaryFaultsWithEarlyCompaction(t *testing.T) {
	onStores(t, testSummaryFaultsWithEarlyCompaction)
}

func testSummaryFaultsWithEarlyCompaction(t *testing.T, k storeKind) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	for _, tt := range []struct {
		name    string
		reply   modeltest.Reply
		want    string
		timeout time.Duration
	}{
		{"HTTP 500", modeltest.Error(500), "500", time.Minute},
		// Long enough for the good summary after it on a loaded machine.
		{"times out", modeltest.Reply{Content: []model.Block{model.TextBlock("<summary>never finishes")}, Hold: never, HoldAfter: 2}, "longer than", 2 * time.Second},
		{"empty summary", modeltest.Text("   "), "empty summary", time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fm := &faultModel{
				notesFault:   func(int) (modeltest.Reply, bool) { return modeltest.Error(500), true },
				summaryFault: func(n int) (modeltest.Reply, bool) { return tt.reply, n == 1 },
			}
			fr := runFaults(t, k, fm, time.Minute, tt.timeout)
			if got := fr.said("auto-compaction failed"); len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("lines about the compaction %q: want one, saying %q", got, tt.want)
			}
			if fm.summaries < 2 {
				t.Errorf("%d summary requests: the one after the failure did not come", fm.summaries)
			}
		})
	}
}
