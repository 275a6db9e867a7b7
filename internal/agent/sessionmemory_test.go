package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/sessionmemory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// notesScript answers the main conversation as its script does, and the
// agent updating the session notes with an Edit that adds a Worklog line,
// then a short answer.
type notesScript struct {
	*script
	mu      sync.Mutex
	path    string
	updates int
}

// isNotesRequest tells the fork's requests: they end with its
// instruction, or with the result of its edit.
func isNotesRequest(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte("cairn asks you to update the session notes"))
}

// startsUpdate tells the first request of an update: the instruction is
// its last block.
func startsUpdate(r *modeltest.Request) bool {
	msgs := r.Params.Messages
	last := msgs[len(msgs)-1].Content
	return strings.Contains(last[len(last)-1].Text, "cairn asks you to update the session notes")
}

const worklogLine = "_One terse line per step taken, oldest first_"

func (n *notesScript) respond(r *modeltest.Request) modeltest.Reply {
	if !isNotesRequest(r) {
		return n.script.respond(r)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !startsUpdate(r) {
		return modeltest.Text("Notes updated.")
	}
	n.updates++
	in, _ := json.Marshal(map[string]string{
		"file_path": n.path, "old_string": worklogLine,
		"new_string": worklogLine + fmt.Sprintf("\n- NOTE-%d: ran Big; the user wants the PLANTED-FACT kept", n.updates),
	})
	return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_notes_%d", n.updates), "Edit", string(in))}}
}

// cacheShare is the part of a request's input read from the cache.
func cacheShare(u model.Usage) float64 {
	total := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	if total == 0 {
		return 0
	}
	return float64(u.CacheReadInputTokens) / float64(total)
}

// notesName is the session notes' name beside the transcript.
const notesName = "session-memory/summary.md"

// TestSessionMemoryCompaction runs a long scripted session: the notes are
// kept up to date by forks that read their prompt from the cache, and
// auto-compaction uses them with no summary request.
func TestSessionMemoryCompaction(t *testing.T) {
	onStores(t, testSessionMemoryCompaction)
}

func testSessionMemoryCompaction(t *testing.T, k storeKind) {
	ns := &notesScript{script: &script{steps: 30}}
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: ns.script}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 40_000, Respond: ns.respond})
	var mu sync.Mutex
	var warnings []string
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = append(o.Tools, tools.Read{}, tools.Edit{})
		o.Warn = func(w string) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() }
		o.EarlyCompactAt = -1 // the notes as the threshold's summary (SPEC SM4)
	})
	ns.mu.Lock()
	ns.path = a.NotesPath()
	ns.mu.Unlock()

	compactions, notices, err := run(t, a, "PLANTED-FACT: please run Big many times")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	a.Close() // lets an update under way finish
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
	if len(compactions) < 2 {
		t.Fatalf("%d compactions over 30 big steps in a 40K window", len(compactions))
	}
	for i, c := range compactions {
		if !strings.Contains(c.Summary, "session notes were the summary") {
			t.Errorf("compaction %d did not use the notes: %s", i, c.Summary)
		}
	}
	var summaries, main, forks int
	var minShare, sumShare float64 = 1, 0
	for _, req := range r.srv.Requests() {
		if req.Status != 200 {
			t.Errorf("request %s answered %d", req.ID, req.Status)
		}
		switch {
		case isSummaryRequest(req):
			summaries++
		case isNotesRequest(req):
			if !startsUpdate(req) {
				continue
			}
			forks++
			s := cacheShare(req.Usage)
			minShare, sumShare = min(minShare, s), sumShare+s
			t.Logf("update %d: %d input tokens, %.1f%% from the cache (%+v)", forks, req.Usage.InputTokens+req.Usage.CacheReadInputTokens+req.Usage.CacheCreationInputTokens, 100*s, req.Usage)
		default:
			main++
		}
	}
	t.Logf("%d main requests, %d compactions, %d summary requests, %d note updates; fork cache share min %.1f%%, mean %.1f%%",
		main, len(compactions), summaries, forks, 100*minShare, 100*sumShare/float64(forks))
	if summaries != 0 {
		t.Errorf("%d summary requests: compaction with notes must make none", summaries)
	}
	if forks < 2 {
		t.Fatalf("%d note updates", forks)
	}
	if minShare < 0.9 {
		t.Errorf("a fork read only %.1f%% of its input from the cache, want ≥ 90%%", 100*minShare)
	}
	// The notes stood as the summary: the model reads them.
	last := r.srv.Last()
	if !bytes.Contains(last.Body, []byte("- NOTE-")) || !bytes.Contains(last.Body, []byte("PLANTED-FACT: please run Big many times")) {
		t.Error("the last request carries neither the notes nor the user's request")
	}
	notes := storedSidecar(t, a, notesName)
	if strings.Count(string(notes), "- NOTE-") != forks {
		t.Errorf("notes after %d updates:\n%s", forks, notes)
	}
	// The live history is what a resume loads.
	conv, err := a.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := encode(t, conv.Messages()), encode(t, a.History()); got != want {
		t.Errorf("resumed view differs from the live history after compaction")
	}
}

// TestSessionMemoryBaseline is the same session without notes: every
// compaction makes a summary request.
func TestSessionMemoryBaseline(t *testing.T) {
	onStores(t, testSessionMemoryBaseline)
}

func testSessionMemoryBaseline(t *testing.T, k storeKind) {
	ns := &notesScript{script: &script{steps: 30}}
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: ns.script}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 40_000, Respond: ns.respond})
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = append(o.Tools, tools.Read{}, tools.Edit{})
		o.DisableSessionMemory = true
	})
	compactions, _, err := run(t, a, "PLANTED-FACT: please run Big many times")
	if err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, req := range r.srv.Requests() {
		if isNotesRequest(req) {
			t.Error("notes updated with session memory off")
		}
		if isSummaryRequest(req) {
			summaries++
		}
	}
	t.Logf("without notes: %d compactions, %d summary requests", len(compactions), summaries)
	if summaries < len(compactions) || len(compactions) == 0 {
		t.Errorf("%d summary requests for %d compactions", summaries, len(compactions))
	}
}

// TestSummaryCommand is /summary: the notes are brought up to date at
// once, on a resumed session that sent no request yet.
func TestSummaryCommand(t *testing.T) {
	onStores(t, testSummaryCommand)
}

func testSummaryCommand(t *testing.T, k storeKind) {
	ns := &notesScript{script: &script{steps: 2}}
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: ns.script}
	r.srv = modeltest.Start(t, modeltest.Config{Respond: ns.respond})
	withEdit := func(o *agent.Options) { o.Tools = append(o.Tools, tools.Read{}, tools.Edit{}) }
	a := r.open(t, tokens.Window{}, withEdit)
	if _, _, err := run(t, a, "a short task"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if ns.updates != 0 {
		t.Fatalf("%d updates under the 10,000-token threshold", ns.updates)
	}
	b := r.open(t, tokens.Window{}, func(o *agent.Options) { withEdit(o); o.Continue = true })
	ns.mu.Lock()
	ns.path = b.NotesPath()
	ns.mu.Unlock()
	notes, err := b.Summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes, "- NOTE-1") || !strings.HasPrefix(notes, "# Session Title") {
		t.Errorf("notes:\n%s", notes)
	}
	if !strings.Contains(b.NotesPath(), b.ID()+"/session-memory/summary.md") {
		t.Errorf("notes at %s", b.NotesPath())
	}
	if got := sessionmemory.Path(b.ID()); !strings.HasSuffix(b.NotesPath(), got) {
		t.Errorf("notes path %s", b.NotesPath())
	}
}

// TestSessionMemoryForkFails: every update fails; the conversation goes
// on, says so, and compaction falls back to the summary request.
func TestSessionMemoryForkFails(t *testing.T) {
	onStores(t, testSessionMemoryForkFails)
}

func testSessionMemoryForkFails(t *testing.T, k storeKind) {
	ns := &notesScript{script: &script{steps: 20}}
	respond := func(req *modeltest.Request) modeltest.Reply {
		if isNotesRequest(req) {
			return modeltest.Error(400)
		}
		return ns.respond(req)
	}
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: ns.script}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 40_000, Respond: respond})
	var mu sync.Mutex
	var warnings []string
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = append(o.Tools, tools.Read{}, tools.Edit{})
		o.Warn = func(w string) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() }
		o.EarlyCompactAt = -1 // the notes as the threshold's summary (SPEC SM4)
	})
	compactions, notices, err := run(t, a, "go")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	a.Close()
	if len(warnings) == 0 || !strings.Contains(warnings[0], "the conversation goes on") {
		t.Errorf("warnings %q", warnings)
	}
	summaries := 0
	for _, req := range r.srv.Requests() {
		if isSummaryRequest(req) {
			summaries++
		}
	}
	if len(compactions) == 0 || summaries != len(compactions) {
		t.Errorf("%d compactions, %d summary requests: without notes each one summarises", len(compactions), summaries)
	}
}

// TestSessionMemoryNeverBlocks holds the fork's request until the turn
// has ended: a conversation that waited for its notes would never end.
func TestSessionMemoryNeverBlocks(t *testing.T) {
	onStores(t, testSessionMemoryNeverBlocks)
}

func testSessionMemoryNeverBlocks(t *testing.T, k storeKind) {
	ns := &notesScript{script: &script{steps: 8}}
	started, release := make(chan struct{}, 1), make(chan struct{})
	respond := func(req *modeltest.Request) modeltest.Reply {
		if isNotesRequest(req) && startsUpdate(req) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
		}
		return ns.respond(req)
	}
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), sc: ns.script}
	r.srv = modeltest.Start(t, modeltest.Config{Respond: respond})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // before the server closes, should the test stop early
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = append(o.Tools, tools.Read{}, tools.Edit{})
		o.EarlyCompactAt = -1 // the every-5,000-tokens thresholds, due in one turn
	})
	ns.mu.Lock()
	ns.path = a.NotesPath()
	ns.mu.Unlock()
	if _, _, err := run(t, a, "go"); err != nil {
		t.Fatal(err)
	}
	// The update may reach the server only after the turn (a loaded
	// machine); either way the turn ended while its answer was held.
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no update started")
	}
	let()
	a.Close()
	notes := storedSidecar(t, a, notesName)
	if !strings.Contains(string(notes), "- NOTE-1") {
		t.Errorf("the update did not finish after the turn:\n%s", notes)
	}
}
