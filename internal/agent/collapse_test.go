package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// emitTool answers a call with as many tokens of output as its input asks.
type emitTool struct{}

func (emitTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Emit", Description: "emits output", InputSchema: json.RawMessage(`{"type":"object","properties":{"tokens":{"type":"integer"}}}`)}
}
func (emitTool) ReadOnly(json.RawMessage) bool        { return true }
func (emitTool) Destructive(json.RawMessage) bool     { return false }
func (emitTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (emitTool) Run(_ context.Context, _ *tool.Env, in json.RawMessage) (tool.Result, error) {
	var a struct{ Tokens int }
	if err := json.Unmarshal(in, &a); err != nil {
		return tool.Errorf("bad input: %v", err), nil
	}
	return tool.Text(strings.Repeat("emitted ", a.Tokens/2)), nil
}

// foldScript plays a session: each turn makes the tool calls it is given
// (the tokens each result holds), then answers. Fold requests get a
// summary for each part they list; summary requests a summary.
type foldScript struct {
	mu        sync.Mutex
	steps     []int
	calls     int
	folds     int
	foldReply func(*modeltest.Request, int) modeltest.Reply // nil: foldSummaries
	// before runs before a request of the conversation is answered,
	// without the lock.
	before func()
}

func isFoldRequest(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte(`Write each summary as <fold n=`))
}

var foldPartRE = regexp.MustCompile(`(\d+)\. from (?:the message|your response)`)

func (s *foldScript) turn(steps ...int) {
	s.mu.Lock()
	s.steps = steps
	s.mu.Unlock()
}

// foldSummaries answers the nth fold request with a summary of each part
// it lists.
func foldSummaries(r *modeltest.Request, n int) modeltest.Reply {
	var b strings.Builder
	for _, m := range foldPartRE.FindAllSubmatch(r.Body, -1) {
		fmt.Fprintf(&b, "<fold n=\"%s\">FOLD-%d.%s: Emit was called and its output read.</fold>\n", m[1], n, m[1])
	}
	return modeltest.Text(b.String())
}

func (s *foldScript) respond(r *modeltest.Request) modeltest.Reply {
	switch {
	case isFoldRequest(r):
		s.mu.Lock()
		s.folds++
		n, reply := s.folds, s.foldReply
		s.mu.Unlock()
		if reply != nil {
			return reply(r, n)
		}
		return foldSummaries(r, n)
	case isSummaryRequest(r):
		return modeltest.Text("<summary>SUMMARY: the user wants output emitted; PROMPT-1 is the task.</summary>")
	}
	if s.before != nil {
		s.before()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.steps) == 0 {
		return modeltest.Text("Done.")
	}
	s.calls++
	in := fmt.Sprintf(`{"tokens":%d}`, s.steps[0])
	s.steps = s.steps[1:]
	return modeltest.Reply{Content: []model.Block{model.TextBlock(fmt.Sprintf("Step %d.", s.calls)), modeltest.ToolUse(fmt.Sprintf("toolu_%03d", s.calls), "Emit", in)}}
}

// staging lets the conversation's requests wait for the background folds
// started before them, so that a test sees them ready at the next request
// whatever the scheduling.
type staging struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running int
	events  []string
}

func newStaging() *staging {
	s := &staging{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *staging) notify(e compact.CollapseEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fmt.Sprintf("%s %d", e.Kind, e.Spans))
	switch e.Kind {
	case "started":
		s.running++
	case "staged", "failed", "dropped":
		s.running--
		s.cond.Broadcast()
	}
}

// wait waits for the folds under way, at most 30 seconds: a fold whose
// end is never told fails the test instead of hanging it.
func (s *staging) wait() {
	expired := false
	timer := time.AfterFunc(30*time.Second, func() {
		s.mu.Lock()
		expired = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.running > 0 && !expired {
		s.cond.Wait()
	}
	if expired {
		s.events = append(s.events, "wait expired")
	}
}

// spreadIDs returns uuids that differ in their first digits, so that
// their snip tags differ, in a fixed order.
func spreadIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%08x-0000-4000-8000-%012d", uint32(n)*2654435761, n)
	}
}

type collapseRig struct {
	srv   *modeltest.Server
	home  session.Home
	cwd   string
	store transcript.Store // nil: the home's file store
	sc    *foldScript
	stage *staging
	clock *clock
}

// The rig's window: auto-compaction at 23,000 tokens; collapse stages at
// 18,400, commits at 20,700 and blocks at 23,000.
var collapseWindow = tokens.Window{Size: 40_000, MaxOutput: 4_000}

func newCollapseRig(t *testing.T, k storeKind, wait bool) *collapseRig {
	t.Helper()
	r := &collapseRig{home: session.Home{Dir: fixedDir(t)}, cwd: fixedDir(t), store: k.store(), sc: &foldScript{}, stage: newStaging(),
		clock: &clock{now: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)}}
	if wait {
		r.sc.before = r.stage.wait
	}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: collapseWindow.Size, Respond: r.sc.respond, Now: r.clock.Now})
	return r
}

func (r *collapseRig) open(t *testing.T, o func(*agent.Options)) *agent.Agent {
	t.Helper()
	opts := agent.Options{Home: r.home, Cwd: r.cwd, Store: r.store, ModelName: "claude-test", MaxTokens: 4000,
		Window: collapseWindow, Tools: []tool.Tool{emitTool{}}, Entrypoint: "sdk-cli",
		DisableSessionMemory: true, Now: r.clock.Now, NewUUID: spreadIDs(),
		Collapse: &compact.CollapseConfig{Notify: r.stage.notify}}
	return openOn(t, r.srv, opts, o)
}

// commits returns the collapse commits of a's transcript.
func commits(t *testing.T, a *agent.Agent) []*transcript.CollapseMetadata {
	return records(t, a, (*transcript.Entry).IsCollapseCommit, (*transcript.Entry).DecodeCollapseMetadata)
}

// conversation returns the requests of the conversation itself, without
// the fold and summary requests. A request whose body did not decode is
// left out too: a fold request cancelled (at its timeout) while its body
// was being sent reaches the server cut short, before the instruction
// that names it.
func conversation(reqs []*modeltest.Request) []*modeltest.Request {
	var out []*modeltest.Request
	for _, r := range reqs {
		if r.Params != nil && !isFoldRequest(r) && !isSummaryRequest(r) {
			out = append(out, r)
		}
	}
	return out
}

// nudgePrefix starts the snip layer's reminder near the threshold.
const nudgePrefix = "<system-reminder>\nThe context is filling up"

func nudged(r *modeltest.Request) bool {
	return bytes.Contains(r.Body, []byte("The context is filling up"))
}

// withoutNudge is sent without the snip layer's reminder.
func withoutNudge(t *testing.T, r *modeltest.Request) []string {
	t.Helper()
	var out []string
	for _, m := range r.Params.Messages {
		var content []model.Block
		for _, b := range m.Content {
			if b.Type == model.BlockText && strings.HasPrefix(b.Text, nudgePrefix) {
				continue
			}
			delete(b.Extra, "cache_control")
			content = append(content, b)
		}
		m.Content = content
		raw, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
	}
	return out
}

func repeatSteps(n, size int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// TestCollapseFoldsAndResumes: a long turn passes the staging threshold,
// older steps are folded in the background and committed in one batch at
// the commit threshold; requests carry the summaries while the history
// keeps every message; the prefix changes at the commit only, and the
// next request reads the new prefix from the cache; the transcript
// records the commit, and a resumed session sends the same bytes.
func TestCollapseFoldsAndResumes(t *testing.T) {
	onStores(t, testCollapseFoldsAndResumes)
}

func testCollapseFoldsAndResumes(t *testing.T, k storeKind) {
	r := newCollapseRig(t, k, true)
	a := r.open(t, nil)
	r.sc.turn(repeatSteps(16, 1_500)...)
	compactions, notices, err := run(t, a, "PROMPT-1: emit output until you have enough")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) > 0 || len(notices) > 0 {
		t.Fatalf("%d compactions, notices %q: collapse alone should keep the context in bounds", len(compactions), notices)
	}
	all := r.srv.Requests()
	reqs := conversation(all)
	var folded []int
	for k, req := range reqs {
		if req.Status != 200 {
			t.Fatalf("request %d answered %d", k, req.Status)
		}
		if bytes.Contains(req.Body, []byte("[Collapsed: FOLD-")) && (len(folded) == 0 || !bytes.Contains(reqs[k-1].Body, []byte("[Collapsed: FOLD-"))) {
			folded = append(folded, k)
		}
	}
	md := commits(t, a)
	t.Logf("events %q; commits at requests %v; prompts %v", r.stage.events, folded, func() (p []int64) {
		for _, q := range reqs {
			p = append(p, prompt(q))
		}
		return
	}())
	if len(md) != 1 || len(folded) != 1 || md[0].Trigger != compact.CollapseStaged || len(md[0].Spans) == 0 || md[0].TokensSaved <= 0 {
		t.Fatalf("commits %+v, first folded at requests %v: want one staged commit", md, folded)
	}
	at := folded[0]
	// The prefix changes at the commit only; the request after it reads
	// the new prefix from the cache.
	// (The snip layer's reminder near the threshold is sent once, after a
	// breakpoint of its own: the request after it reads up to there.)
	for k := 1; k < len(reqs); k++ {
		prev, next := withoutNudge(t, reqs[k-1]), withoutNudge(t, reqs[k])
		if got := extends(prev, next); got == (k == at) {
			t.Errorf("request %d: extends the previous one = %v, commit at %d", k, got, at)
		}
		read, want := reqs[k].Usage.CacheReadInputTokens, prompt(reqs[k-1])
		if nudged(reqs[k-1]) {
			want = read // checked below
			if read < prompt(reqs[k-1])*9/10 {
				t.Errorf("request %d read %d tokens from the cache after the reminder, of %d", k, read, prompt(reqs[k-1]))
			}
		}
		if k != at && read != want {
			t.Errorf("request %d read %d tokens from the cache, want the previous prompt's %d", k, read, want)
		}
	}
	if prompt(reqs[at]) >= prompt(reqs[at-1]) {
		t.Errorf("the commit did not shrink the prompt: %d then %d", prompt(reqs[at-1]), prompt(reqs[at]))
	}
	// Fold requests share the conversation's prefix.
	for _, req := range all {
		if isFoldRequest(req) && req.Usage.CacheReadInputTokens == 0 {
			t.Errorf("fold request %s read nothing from the cache: %+v", req.ID, req.Usage)
		}
	}
	// The first message — the environment, the instruction files, the
	// task — is never folded.
	if first := reqs[len(reqs)-1].Params.Messages[0].Text(); !strings.Contains(first, "PROMPT-1") || !strings.Contains(first, "currentDate") {
		t.Errorf("the first message sent is %q", first)
	}
	// The history keeps every message.
	h := a.History()
	if n := len(h); n != 34 {
		t.Errorf("history of %d messages, want 34", n)
	}
	for _, m := range h {
		if strings.Contains(m.Text(), "[Collapsed:") {
			t.Fatal("a summary made it into the history")
		}
	}
	golden(t, "collapse_before.golden", reqs[at-1], r.cwd)
	golden(t, "collapse_commit.golden", reqs[at], r.cwd)
	last := reqs[len(reqs)-1]
	if s := checkResumedView(t, a, last); s.Collapse.Count != 1 || s.Collapse.Tokens != md[0].TokensSaved {
		t.Errorf("savings %+v, want the commit's %d", s.Collapse, md[0].TokensSaved)
	}
	a.Close()

	b := r.open(t, func(o *agent.Options) { o.Continue = true })
	r.sc.turn()
	if _, _, err := run(t, b, "RESUMED: anything else?"); err != nil {
		t.Fatal(err)
	}
	resumed := r.srv.Last()
	if !extends(sent(t, last), sent(t, resumed)) {
		t.Error("the resumed request does not extend the last one sent before the resume")
	}
	if read := resumed.Usage.CacheReadInputTokens; read != prompt(last) {
		t.Errorf("the resumed request read %d tokens from the cache, want %d", read, prompt(last))
	}
	golden(t, "collapse_resumed.golden", resumed, r.cwd)
	// A snip reminder names only messages the request carries (tagged),
	// not those a fold replaced.
	named := regexp.MustCompile(`- \[id:([0-9a-z]+)\] about`)
	reminded := 0
	for k, req := range append(reqs, resumed) {
		for _, m := range named.FindAllSubmatch(req.Body, -1) {
			reminded++
			if n := bytes.Count(req.Body, []byte("[id:"+string(m[1])+"]")); n < 2 {
				t.Errorf("request %d: the snip reminder names %s, which the request does not carry", k, m[1])
			}
		}
	}
	if reminded == 0 {
		t.Error("no request carries a snip reminder: the check above needs one")
	}
	if n := len(commits(t, b)); n != 1 {
		t.Errorf("%d commits after the resume, want still 1", n)
	}
}

// TestCollapseBlockingCommit: a result that takes the context past the
// blocking threshold (here the auto-compaction threshold, which comes
// before 95% of this small window) is folded before the request goes:
// synchronously when no fold was staged, or by waiting for the one under
// way. Either way collapse frees enough and auto-compaction does not run.
func TestCollapseBlockingCommit(t *testing.T) {
	onStores(t, testCollapseBlockingCommit)
}

func testCollapseBlockingCommit(t *testing.T, k storeKind) {
	t.Run("nothing staged", func(t *testing.T) {
		r := newCollapseRig(t, k, true)
		a := r.open(t, nil)
		// About 16,600 tokens (below the staging threshold), then 8,000 more.
		r.sc.turn(append(repeatSteps(10, 1_500), 8_000, 1_500)...)
		compactions, notices, err := run(t, a, "PROMPT-1: emit")
		if err != nil || len(compactions) > 0 || len(notices) > 0 {
			t.Fatalf("run: %v, %d compactions, notices %q", err, len(compactions), notices)
		}
		md := commits(t, a)
		if len(md) != 1 || md[0].Trigger != compact.CollapseBlocking || len(md[0].Spans) == 0 {
			t.Fatalf("commits %+v, want one blocking commit", md)
		}
		if r.sc.folds != 1 || len(r.stage.events) != 1 || r.stage.events[0] != fmt.Sprintf("committed %d", len(md[0].Spans)) {
			t.Errorf("%d fold requests, events %q: want one synchronous fold", r.sc.folds, r.stage.events)
		}
		reqs := conversation(r.srv.Requests())
		for k, req := range reqs {
			folded := bytes.Contains(req.Body, []byte("[Collapsed: FOLD-1."))
			if want := k >= 11; folded != want { // request k carries k results
				t.Errorf("request %d folded = %v, want %v", k, folded, want)
			}
		}
	})
	t.Run("a fold under way", func(t *testing.T) {
		r := newCollapseRig(t, k, false)
		gate := make(chan struct{})
		var once sync.Once
		open := func() { once.Do(func() { close(gate) }) }
		t.Cleanup(open) // before the server closes: a held fold must not hang it
		r.sc.foldReply = func(req *modeltest.Request, n int) modeltest.Reply {
			<-gate // until the request is seen waiting
			return foldSummaries(req, n)
		}
		started := false
		r.sc.before = func() {
			r.stage.mu.Lock()
			defer r.stage.mu.Unlock()
			if r.stage.running > 0 && !started {
				started = true
				r.sc.mu.Lock()
				r.sc.steps = []int{8_000, 1_500}
				r.sc.mu.Unlock()
			}
		}
		a := r.open(t, nil)
		r.sc.turn(repeatSteps(30, 1_500)...)
		var compactions int
		var statuses []string
		for ev, err := range a.Run(t.Context(), "PROMPT-1: emit") {
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case engine.EventCompact:
				compactions++
			case engine.EventStatus:
				statuses = append(statuses, ev.Text)
				if ev.Text == "collapsing" {
					open()
				}
			case engine.EventNotice:
				t.Errorf("notice %q", ev.Text)
			}
		}
		md := commits(t, a)
		if !started || compactions > 0 || len(md) != 1 || md[0].Trigger != compact.CollapseBlocking {
			t.Fatalf("staged %v, %d compactions, commits %+v, statuses %q: want the request to wait for the fold", started, compactions, md, statuses)
		}
	})
}

// TestCollapseFoldFaults: a fold request that fails, or takes longer than
// the timeout, leaves the conversation going — auto-compaction takes
// over, every request of the conversation fits — and says so.
func TestCollapseFoldFaults(t *testing.T) {
	onStores(t, testCollapseFoldFaults)
}

func testCollapseFoldFaults(t *testing.T, k storeKind) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	for _, tt := range []struct {
		name  string
		reply func(*modeltest.Request, int) modeltest.Reply
		say   string
	}{
		{"fails", func(*modeltest.Request, int) modeltest.Reply { return modeltest.Error(500) }, "fold request"},
		{"too slow", func(r *modeltest.Request, n int) modeltest.Reply {
			reply := foldSummaries(r, n)
			reply.Hold, reply.HoldAfter = never, 1
			return reply
		}, "took longer than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newCollapseRig(t, k, false)
			r.sc.foldReply = tt.reply
			a := r.open(t, func(o *agent.Options) { o.Collapse.Timeout = 100 * time.Millisecond })
			r.sc.turn(repeatSteps(20, 1_500)...)
			compactions, notices, err := run(t, a, "PROMPT-1: emit")
			if err != nil {
				t.Fatalf("run: %v (notices %q)", err, notices)
			}
			if len(compactions) == 0 || len(commits(t, a)) != 0 {
				t.Errorf("%d compactions, %d collapse commits: auto-compaction should have taken over", len(compactions), len(commits(t, a)))
			}
			said := false
			for _, n := range notices {
				said = said || (strings.HasPrefix(n, "context collapse") && strings.Contains(n, tt.say))
			}
			if !said {
				t.Errorf("notices %q do not say what went wrong", notices)
			}
			for _, req := range conversation(r.srv.Requests()) {
				if req.Status != 200 {
					t.Errorf("request %s answered %d", req.ID, req.Status)
				}
			}
			if last := r.srv.Last(); !strings.Contains(string(last.Body), "toolu_020") && !isFoldRequest(last) {
				t.Error("the conversation did not reach its last step")
			}
		})
	}
}

// TestPinAFoldedMessage: pinning a message the model sees only folded
// into a summary shows it word for word from the next request on.
func TestPinAFoldedMessage(t *testing.T) {
	onStores(t, testPinAFoldedMessage)
}

func testPinAFoldedMessage(t *testing.T, k storeKind) {
	r := newCollapseRig(t, k, true)
	a := r.open(t, nil)
	r.sc.turn(repeatSteps(16, 1_500)...)
	if _, notices, err := run(t, a, "PROMPT-1: emit output until you have enough"); err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	md := commits(t, a)
	if len(md) == 0 || len(md[0].Spans) == 0 {
		t.Fatal("nothing was folded")
	}
	pin, err := a.Pin(t.Context(), md[0].Spans[0].FromUUID)
	if err != nil {
		t.Fatal(err)
	}
	r.sc.turn()
	if _, _, err := run(t, a, "anything else?"); err != nil {
		t.Fatal(err)
	}
	reqs := conversation(r.srv.Requests())
	var shown bool
	for _, m := range reqs[len(reqs)-1].Params.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, "The user pinned this") && strings.Contains(b.Text, pin.Text) {
				shown = true
			}
		}
	}
	if !shown {
		t.Errorf("the pinned message %q is not shown to the model", pin.Text)
	}
}
