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

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// steps answers the requests of a test in order, each step seeing the
// request it answers; summary requests get a summary.
type snipSteps struct {
	mu    sync.Mutex
	next  int
	steps []func(body []byte) modeltest.Reply
}

func (s *snipSteps) respond(r *modeltest.Request) modeltest.Reply {
	if isSummaryRequest(r) {
		return modeltest.Text("<summary>the work so far</summary>")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.steps) {
		return modeltest.Text("done")
	}
	s.next++
	return s.steps[s.next-1](r.Body)
}

func sayText(s string) func([]byte) modeltest.Reply {
	return func([]byte) modeltest.Reply { return modeltest.Text(s) }
}

func callTool(id, name, input string) func([]byte) modeltest.Reply {
	return func([]byte) modeltest.Reply {
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, name, input)}}
	}
}

// snipAt calls Snip with the tags that follow each marker in the request.
func snipAt(t *testing.T, id string, markers ...string) func([]byte) modeltest.Reply {
	return func(body []byte) modeltest.Reply {
		var ids []string
		for _, m := range markers {
			ids = append(ids, tagAfter(t, body, m))
		}
		in, _ := json.Marshal(map[string]any{"ids": ids, "reason": "not needed"})
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, compact.SnipToolName, string(in))}}
	}
}

var tagRE = regexp.MustCompile(`\[id:([0-9a-z]+)\]`)

// tagAfter returns the id of the first tag after marker in a request body.
func tagAfter(t *testing.T, body []byte, marker string) string {
	i := bytes.Index(body, []byte(marker))
	if i < 0 {
		t.Errorf("no %s in the request", marker)
		return "missing"
	}
	m := tagRE.FindSubmatch(body[i:])
	if m == nil {
		t.Errorf("no tag after %s", marker)
		return "missing"
	}
	return string(m[1])
}

// sent returns the messages of a request as the cache sees them: each
// encoded, without the breakpoints.
func cachedMessages(t *testing.T, r *modeltest.Request) []string {
	t.Helper()
	if r.Params == nil {
		t.Fatalf("request %s did not decode", r.ID)
	}
	var out []string
	for _, m := range r.Params.Messages {
		for i := range m.Content {
			delete(m.Content[i].Extra, "cache_control")
		}
		enc, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(enc))
	}
	return out
}

func snipRig(t *testing.T, k storeKind, window int64, respond func(*modeltest.Request) modeltest.Reply) *rig {
	r := &rig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store()}
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: window, Respond: respond})
	return r
}

func runAll(t *testing.T, a *agent.Agent, prompt string) []engine.Event {
	t.Helper()
	var events []engine.Event
	for ev, err := range a.Run(t.Context(), prompt) {
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		events = append(events, ev)
	}
	return events
}

func TestSnipTagsAreStable(t *testing.T) {
	onStores(t, testSnipTagsAreStable)
}

func testSnipTagsAreStable(t *testing.T, k storeKind) {
	sc := &script{steps: 4}
	r := newRig(t, k, 0, sc)
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, nil)
	runAll(t, a, "first task")
	sc.steps = 6
	runAll(t, a, "second task")
	reqs := r.srv.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := cachedMessages(t, reqs[i-1]), cachedMessages(t, reqs[i])
		for j := range prev {
			if j >= len(cur) || cur[j] != prev[j] {
				t.Fatalf("request %d changed message %d of request %d:\nbefore: %s\nafter:  %s", i, j, i-1, prev[j], cur[min(j, len(cur)-1)])
			}
		}
		// So the cache holds everything the previous request sent.
		p, u := reqs[i-1].Usage, reqs[i].Usage
		if want := p.CacheReadInputTokens + p.CacheCreationInputTokens + p.InputTokens; u.CacheReadInputTokens < want {
			t.Errorf("request %d read %d tokens from the cache, want the previous request's %d", i, u.CacheReadInputTokens, want)
		}
	}
	// Every user message carries one tag, made from its first uuid.
	last := r.srv.Last().Params.Messages
	hist := a.History()
	tagged := 0
	for i, m := range last {
		if m.Role != model.RoleUser {
			continue
		}
		tags := tagRE.FindAllString(fmt.Sprint(m.Content), -1)
		if len(tags) != 1 || tags[0] != compact.Tag(hist[i].IDs[0]) {
			t.Errorf("message %d has tags %q, want %s", i, tags, compact.Tag(hist[i].IDs[0]))
		}
		tagged++
	}
	if tagged != 8 {
		t.Errorf("%d tagged user messages, want 8", tagged)
	}
	// The history itself carries no tag.
	if tagRE.MatchString(encode(t, hist)) {
		t.Error("a tag leaked into the history")
	}
}

func TestSnipRemovesAndResumeAgrees(t *testing.T) {
	onStores(t, testSnipRemovesAndResumeAgrees)
}

func testSnipRemovesAndResumeAgrees(t *testing.T, k storeKind) {
	st := &snipSteps{}
	r := snipRig(t, k, 0, st.respond)
	st.steps = []func([]byte) modeltest.Reply{
		callTool("toolu_1", "Big", `{}`), callTool("toolu_2", "Big", `{}`), sayText("explored"), // explore
		sayText("ok, scratched"), // scratch that
		snipAt(t, "toolu_3", `"tool_use_id":"toolu_1"`, `"text":"scratch that`), sayText("tidied"), // tidy up
		sayText("fine"), // next, after the resume
	}
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, nil)
	for _, p := range []string{"explore", "scratch that", "tidy up"} {
		runAll(t, a, p)
	}
	after := r.srv.Requests()[5] // the request after the Snip call
	if after.Status != 200 {
		t.Fatalf("the request after the snip answered %d", after.Status)
	}
	body := after.Body
	if bytes.Contains(body, []byte("toolu_1")) || bytes.Contains(body, []byte(`"text":"scratch that`)) {
		t.Errorf("the request after the snip still carries what was snipped: %s", body)
	}
	if !bytes.Contains(body, []byte("toolu_2")) || !bytes.Contains(body, []byte("Snipped 3 messages")) {
		t.Errorf("the request after the snip lost too much, or the tool did not report: %s", body)
	}
	// The replies on either side of the snipped prompt are one message now.
	joined := false
	for _, m := range after.Params.Messages {
		if s := fmt.Sprint(m.Content); strings.Contains(s, "explored") && strings.Contains(s, "ok, scratched") {
			joined = m.Role == model.RoleAssistant
		}
	}
	if !joined {
		t.Error("the two replies around the snipped prompt were not joined")
	}
	// Headless: the history drops them; the transcript keeps them.
	if h := encode(t, a.History()); strings.Contains(h, "toolu_1") || strings.Contains(h, `"text":"scratch that`) {
		t.Error("the history still holds the snipped messages")
	}
	data := stored(t, a)
	if !bytes.Contains(data, []byte(`"subtype":"snip_boundary"`)) || !bytes.Contains(data, []byte(`"snipMetadata":{"removedUuids":[`)) {
		t.Error("no snip_boundary with removedUuids stored")
	}
	if !bytes.Contains(data, []byte("toolu_1")) || !bytes.Contains(data, []byte("scratch that")) {
		t.Error("the transcript lost the snipped lines")
	}
	conv, err := a.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := encode(t, conv.Messages()), encode(t, a.History()); got != want {
		t.Errorf("a resume would see another conversation:\nresumed: %s\nlive:    %s", got, want)
	}
	scroll := scrollBack(t, a)
	if !strings.Contains(encode(t, scroll), `"text":"scratch that`) {
		t.Error("scroll-back lost the snipped messages")
	}
	live := cachedMessages(t, r.srv.Last())
	a.Close()

	b := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, func(o *agent.Options) { o.Continue = true })
	runAll(t, b, "next")
	resumed := cachedMessages(t, r.srv.Last())
	for i := range live[:len(live)-1] { // the last one answered
		if i >= len(resumed) || resumed[i] != live[i] {
			t.Fatalf("the resumed request differs at message %d:\nresumed: %s\nlive:    %s", i, resumed[min(i, len(resumed)-1)], live[i])
		}
	}
	if u := r.srv.Last().Usage; u.CacheReadInputTokens == 0 {
		t.Errorf("the resumed request read nothing from the cache: %+v", u)
	}
}

// scrollBack returns what a's transcript shows scrolling back: every
// message, the snipped ones too.
func scrollBack(t *testing.T, a *agent.Agent) []model.Message {
	t.Helper()
	conv, err := transcript.Load(t.Context(), transcript.BytesSource(stored(t, a)), transcript.LoadOptions{History: true})
	if err != nil {
		t.Fatal(err)
	}
	return conv.Messages()
}

// stubTool is a tool that answers "ok" under a given name.
type stubTool struct{ name string }

func (n stubTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: n.name, Description: n.name, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (stubTool) ReadOnly(json.RawMessage) bool        { return false }
func (stubTool) Destructive(json.RawMessage) bool     { return false }
func (stubTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (stubTool) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	return tool.Text("ok"), nil
}

func TestSnipRefusesThroughTheAgent(t *testing.T) {
	onStores(t, testSnipRefusesThroughTheAgent)
}

func testSnipRefusesThroughTheAgent(t *testing.T, k storeKind) {
	st := &snipSteps{}
	r := snipRig(t, k, 0, st.respond)
	targets := []struct{ marker, want string }{
		{`"tool_use_id":"toolu_todo"`, "todo list"},
		{`"tool_use_id":"toolu_plan"`, "plan"},
		{`"tool_use_id":"toolu_deploy"`, "permission decision (deny, by headless)"},
		{`"text":"the secret word is swordfish`, "pinned"},
		{`"text":"plan the work`, "instruction files"},
		{`"text":"tidy up`, "latest request"},
		{`"tool_use_id":"toolu_snip5"`, "current turn"},
		{`"tool_use_id":"toolu_big"`, ""}, // allowed
	}
	st.steps = []func([]byte) modeltest.Reply{
		callTool("toolu_todo", "TodoWrite", `{}`), callTool("toolu_plan", "ExitPlanMode", `{}`), callTool("toolu_deploy", "Deploy", `{}`),
		callTool("toolu_big", "Big", `{}`), sayText("planned"),
		sayText("noted"),
	}
	for i, tg := range targets {
		st.steps = append(st.steps, snipAt(t, fmt.Sprintf("toolu_snip%d", i), tg.marker))
	}
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, func(o *agent.Options) {
		o.Tools = append(o.Tools, stubTool{"TodoWrite"}, stubTool{"ExitPlanMode"}, stubTool{"Deploy"})
		o.Middleware.Gate = middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
			if call.Name == "Deploy" {
				return engine.Verdict{Reason: "Deploying needs permission.", Record: map[string]string{"decision": "deny", "by": "headless"}}
			}
			return engine.Verdict{Allow: true, Record: map[string]string{"decision": "allow", "by": "mode"}}
		})
	})
	runAll(t, a, "plan the work")
	runAll(t, a, "the secret word is swordfish")
	var prompt string
	for _, m := range a.History() {
		if m.Role == model.RoleUser && strings.HasPrefix(m.Text(), "the secret word") {
			prompt = m.IDs[0]
		}
	}
	if _, err := a.Pin(t.Context(), prompt); err != nil {
		t.Fatal(err)
	}
	var results []tool.Result
	for _, ev := range runAll(t, a, "tidy up") {
		if ev.Type == engine.EventToolResult && ev.Call.Name == compact.SnipToolName {
			results = append(results, *ev.Result)
		}
	}
	if len(results) != len(targets) {
		t.Fatalf("%d Snip results, want %d", len(results), len(targets))
	}
	for i, tg := range targets {
		res := results[i]
		got := res.Content[0].Text
		if tg.want == "" {
			if res.IsError || !strings.HasPrefix(got, "Snipped 2 messages") {
				t.Errorf("snipping %s: %s", tg.marker, got)
			}
			continue
		}
		if !res.IsError || !strings.Contains(got, tg.want) {
			t.Errorf("snipping %s: %q, want a refusal saying %q", tg.marker, got, tg.want)
		}
	}
}

func TestPinsSurviveTenCompactions(t *testing.T) {
	onStores(t, testPinsSurviveTenCompactions)
}

func testPinsSurviveTenCompactions(t *testing.T, k storeKind) {
	sc := &script{}
	r := newRig(t, k, 40_000, sc)
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // compacts at 23,000
	a := r.open(t, w, nil)
	const fact, note = "REPLY-FACT: the build needs Go 1.26", "PINNED-NOTE: deploy only on Fridays"
	r.srv.Enqueue(modeltest.Text(fact))
	runAll(t, a, "what does the build need?")
	h := a.History()
	reply := h[len(h)-1].IDs[0]
	if _, err := a.Pin(t.Context(), reply); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pin(t.Context(), note); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pin(t.Context(), "[id:zzzzzz]"); err == nil {
		t.Error("pinned a tag no message has")
	}
	pinnedAt := len(r.srv.Requests())
	sc.steps = 90
	compactions, notices, err := run(t, a, "go on")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) < 10 {
		t.Fatalf("%d compactions, want at least 10", len(compactions))
	}
	for _, req := range r.srv.Requests()[pinnedAt:] {
		if isSummaryRequest(req) {
			continue
		}
		for _, want := range []string{fact, note} {
			if !bytes.Contains(req.Body, []byte(want)) {
				t.Fatalf("request %s lacks the pinned %q", req.ID, want)
			}
		}
	}
	// Each request repeats the one before it byte for byte (but for its
	// last message, which may carry a reminder), the first after a
	// compaction included: the compacted history is tagged at once.
	reqs := r.srv.Requests()
	for i := pinnedAt + 1; i < len(reqs); i++ {
		if isSummaryRequest(reqs[i]) || isSummaryRequest(reqs[i-1]) {
			continue
		}
		prev, cur := cachedMessages(t, reqs[i-1]), cachedMessages(t, reqs[i])
		for j := 0; j < len(prev)-1; j++ {
			if j >= len(cur) || cur[j] != prev[j] {
				t.Fatalf("request %s changed message %d of the request before it", reqs[i].ID, j)
			}
		}
	}
	a.Close()
	b := r.open(t, w, func(o *agent.Options) { o.Continue = true })
	if got := len(b.Pins()); got != 2 {
		t.Errorf("the resumed session knows %d pins, want 2: %+v", got, b.Pins())
	}
	sc.steps, sc.calls = 0, 0
	runAll(t, b, "and now?")
	for _, want := range []string{fact, note} {
		if !bytes.Contains(r.srv.Last().Body, []byte(want)) {
			t.Errorf("the resumed request lacks the pinned %q", want)
		}
	}
}

func TestSnipNudgeNearTheLimitOnly(t *testing.T) {
	onStores(t, testSnipNudgeNearTheLimitOnly)
}

func testSnipNudgeNearTheLimitOnly(t *testing.T, k storeKind) {
	sc := &script{steps: 30}
	r := newRig(t, k, 40_000, sc)
	a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) { o.Tools = []tool.Tool{bigTool{n: 1000}} })
	if _, _, err := run(t, a, "run Big many times"); err != nil {
		t.Fatal(err)
	}
	const threshold = 23_000
	nudges, prev := 0, false
	for _, req := range r.srv.Requests() {
		if isSummaryRequest(req) {
			continue
		}
		i := bytes.Index(req.Body, []byte("call the Snip tool"))
		has := i >= 0
		u := req.Usage
		if size := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens; has && size < threshold*6/10 {
			t.Errorf("request %s nudged at %d tokens, far from the limit", req.ID, size)
		}
		if has && prev {
			t.Errorf("request %s nudged right after the one before it", req.ID)
		}
		if has {
			nudges++
			// It names messages the request carries.
			named := tagRE.FindSubmatch(req.Body[i:])
			if named == nil || bytes.Count(req.Body, named[0]) < 2 {
				t.Errorf("request %s: the nudge names no tag the request carries", req.ID)
			}
		}
		prev = has
	}
	if nudges == 0 {
		t.Error("no nudge near the limit")
	}
}
