package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// script is the in-process scripted model, with the usage these tests
// read: 10 tokens in, 5 out, and a cache read growing by 100 a request.
func script(steps ...modeltest.Step) *modeltest.Scripted {
	m := modeltest.NewScripted(steps...)
	m.Usage = func(n int) model.Usage {
		return model.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: int64(100 * n)}
	}
	return m
}

var (
	say  = modeltest.Say
	call = modeltest.Call
)

func use(id, name, input string) model.Block {
	return model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// fakeTool is a tool whose behaviour the test sets.
type fakeTool struct {
	name       string
	concurrent bool
	run        func(ctx context.Context, input json.RawMessage) (tool.Result, error)
}

func (f *fakeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: f.name, Description: "test tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (f *fakeTool) ReadOnly(json.RawMessage) bool        { return f.concurrent }
func (f *fakeTool) Destructive(json.RawMessage) bool     { return false }
func (f *fakeTool) ConcurrencySafe(json.RawMessage) bool { return f.concurrent }
func (f *fakeTool) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	return f.run(ctx, input)
}

// harness wires a session to a recorder over an in-memory store.
type harness struct {
	store *transcript.MemStore
	w     *transcript.Writer
	sess  *engine.Session
	model *modeltest.Scripted
}

const sid = "11111111-2222-4333-8444-555555555555"

func newHarness(t *testing.T, m *modeltest.Scripted, tools []tool.Tool, mod func(*engine.Config)) *harness {
	t.Helper()
	store := transcript.NewMemStore()
	app, err := store.OpenAppender(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	t.Cleanup(func() { w.Close() })
	n := 0
	rec := session.NewRecorder(w, session.RecorderOptions{
		Envelope: session.Envelope{SessionID: sid, CWD: "/proj", Version: "test", GitBranch: "main", Entrypoint: "sdk-cli"},
		Now:      func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) },
		NewUUID:  func() string { n++; return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) },
	})
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Model: m, ModelName: "test-model", MaxTokens: 1000, Tools: reg, Env: tool.NewEnv(t.TempDir()), Recorder: rec}
	if mod != nil {
		mod(&cfg)
	}
	return &harness{store: store, w: w, sess: engine.New(cfg, nil), model: m}
}

func (h *harness) run(t *testing.T, ctx context.Context, prompt string) ([]engine.Event, error) {
	t.Helper()
	var events []engine.Event
	in := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(prompt)}}}
	if prompt == "hi" {
		in.Attachments = []engine.Attachment{{Type: "cairn_context", Data: map[string]any{"cwd": "/proj"},
			Rendered: []model.Block{model.TextBlock("<system-reminder>\ncwd: /proj\n</system-reminder>")}}}
	}
	for ev, err := range h.sess.Run(ctx, in) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// reload rebuilds the conversation from the transcript, as a resume would.
func (h *harness) reload(t *testing.T) *transcript.Conversation {
	t.Helper()
	if err := h.w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	src, err := h.store.OpenSource(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transcript.Load(t.Context(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func encode(t *testing.T, msgs []model.Message) string {
	b, err := jsonw.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEndTurn(t *testing.T) {
	h := newHarness(t, script(say("hello there")), nil, nil)
	events, err := h.run(t, t.Context(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != engine.EventDone || last.Done.Stop != engine.StopEndTurn || last.Done.Text != "hello there" || last.Done.Turns != 1 {
		t.Fatalf("last event %+v", last.Done)
	}
	var streamed string
	for _, e := range events {
		if e.Type == engine.EventText {
			streamed += e.Text
		}
	}
	if streamed != "hello there" {
		t.Errorf("streamed %q", streamed)
	}
	// The transcript resumes to exactly what the session holds.
	if diff := cmp.Diff(encode(t, h.sess.History()), encode(t, h.reload(t).Messages())); diff != "" {
		t.Errorf("resume view differs from the live history (-live +resumed):\n%s", diff)
	}
}

func TestToolsRunInParallelThenInOrder(t *testing.T) {
	var running, peak atomic.Int32
	var order []string
	var mu sync.Mutex
	both := make(chan struct{})
	var once sync.Once
	readTool := &fakeTool{name: "Look", concurrent: true, run: func(ctx context.Context, in json.RawMessage) (tool.Result, error) {
		n := running.Add(1)
		if n > peak.Load() {
			peak.Store(n)
		}
		if n == 2 {
			once.Do(func() { close(both) })
		}
		select { // the two reads must overlap
		case <-both:
		case <-time.After(5 * time.Second):
		}
		running.Add(-1)
		mu.Lock()
		order = append(order, "look"+string(in))
		mu.Unlock()
		return tool.Text("saw " + string(in)), nil
	}}
	writeTool := &fakeTool{name: "Change", run: func(ctx context.Context, in json.RawMessage) (tool.Result, error) {
		mu.Lock()
		order = append(order, "change")
		mu.Unlock()
		return tool.Result{Content: []model.Block{model.TextBlock("changed")}, Detail: map[string]any{"ok": true}}, nil
	}}
	m := script(
		call(model.TextBlock("Looking."), use("t1", "Look", `1`), use("t2", "Look", `2`), use("t3", "Change", `{}`), use("t4", "Nope", `{}`)),
		say("done"),
	)
	h := newHarness(t, m, []tool.Tool{readTool, writeTool}, nil)
	if _, err := h.run(t, t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 2 {
		t.Errorf("concurrency-safe calls ran %d at a time, want 2", peak.Load())
	}
	if order[2] != "change" {
		t.Errorf("order %v: the unsafe call must run after the safe ones", order)
	}
	hist := h.sess.History()
	results := hist[2]
	var got []string
	for _, b := range results.Content {
		got = append(got, b.ToolUseID+"="+b.ResultText())
	}
	want := []string{"t1=saw 1", "t2=saw 2", "t3=changed", "t4=No such tool available: Nope"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results in call order (-want +got):\n%s", diff)
	}
	// The second request carried the results, with the cache breakpoint on
	// the last block.
	req := m.Requests()[1]
	lastMsg := req.Messages[len(req.Messages)-1]
	if _, ok := lastMsg.Content[len(lastMsg.Content)-1].Extra["cache_control"]; !ok {
		t.Error("no cache breakpoint on the last block of the request")
	}
	if _, ok := hist[len(hist)-1].Content[0].Extra["cache_control"]; ok {
		t.Error("the breakpoint leaked into the history")
	}
	resumed := h.reload(t).Messages()
	if diff := cmp.Diff(encode(t, hist), encode(t, resumed)); diff != "" {
		t.Errorf("resume view differs from the live history (-live +resumed):\n%s", diff)
	}
	// Messages know the transcript lines they came from, live and resumed.
	for i := range hist {
		if len(hist[i].IDs) == 0 || !slices.Equal(hist[i].IDs, resumed[i].IDs) {
			t.Errorf("message %d: live ids %v, resumed %v", i, hist[i].IDs, resumed[i].IDs)
		}
	}
}

func TestMaxTurnsAndPermit(t *testing.T) {
	loop := func(*model.Request) ([]model.Block, error) {
		return []model.Block{use(fmt.Sprintf("t%d", time.Now().UnixNano()), "Change", `{}`)}, nil
	}
	m := script(loop, loop, loop, loop)
	ran := 0
	change := &fakeTool{name: "Change", run: func(context.Context, json.RawMessage) (tool.Result, error) { ran++; return tool.Text("x"), nil }}
	h := newHarness(t, m, []tool.Tool{change}, func(c *engine.Config) {
		c.MaxTurns = 2
		c.Gate = func(context.Context, tool.Tool, model.Block) engine.Verdict {
			return engine.Verdict{Reason: "denied: ask first", Record: map[string]string{"decision": "deny"}}
		}
	})
	events, err := h.run(t, t.Context(), "loop")
	if err != nil {
		t.Fatal(err)
	}
	done := events[len(events)-1].Done
	if done.Stop != engine.StopMaxTurns || done.Turns != 2 || ran != 0 {
		t.Errorf("stop %v after %d turns, tool ran %d times", done.Stop, done.Turns, ran)
	}
	res := h.sess.History()[2].Content[0]
	if res.ResultText() != "denied: ask first" || res.IsError == nil || !*res.IsError {
		t.Errorf("refused call's result: %q", res.ResultText())
	}
}

func TestModelErrorEndsTheTurnCleanly(t *testing.T) {
	boom := errors.New("overloaded for good")
	m := script(func(*model.Request) ([]model.Block, error) { return nil, boom })
	h := newHarness(t, m, nil, nil)
	if _, err := h.run(t, t.Context(), "hi"); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	c := h.reload(t)
	if got := summaryRoles(c.Messages()); got != "ua" {
		t.Errorf("resumed roles %q: the prompt and the resume's reply", got)
	}
}

func TestCancelDuringTool(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	slow := &fakeTool{name: "Slow", run: func(ctx context.Context, in json.RawMessage) (tool.Result, error) {
		close(started)
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}}
	m := script(call(use("t1", "Slow", `{}`), use("t2", "Slow", `{}`)))
	h := newHarness(t, m, []tool.Tool{slow}, nil)
	go func() { <-started; cancel() }()
	_, err := h.run(t, ctx, "work")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	c := h.reload(t)
	msgs := c.Messages()
	if got := summaryRoles(msgs); got != "uaua" {
		t.Fatalf("roles %q", got)
	}
	res := msgs[2].Content
	if res[0].ResultText() != engine.InterruptedForToolText || res[1].ResultText() != engine.InterruptedForToolText {
		t.Errorf("results %q %q", res[0].ResultText(), res[1].ResultText())
	}
	if !strings.Contains(msgs[2].Text(), engine.InterruptedText) {
		t.Errorf("no interruption marker: %q", msgs[2].Text())
	}
}

func TestCancelDuringStream(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := script(say("a long reply that will be cut"))
	h := newHarness(t, m, nil, nil)
	var err error
	for ev, e := range h.sess.Run(ctx, engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}) {
		if ev.Type == engine.EventText {
			cancel()
		}
		err = e
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	c := h.reload(t)
	if got := summaryRoles(c.Messages()); got != "ua" {
		t.Errorf("roles %q", got)
	}
	if !strings.Contains(c.Messages()[0].Text(), engine.InterruptedText) {
		t.Errorf("first message %q lacks the marker", c.Messages()[0].Text())
	}
}

func summaryRoles(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteByte(m.Role[0])
	}
	return b.String()
}

// A turn's Input.Model names the model of every request of that turn,
// tool rounds included; the next turn goes back to Config.ModelName.
func TestInputModelForOneTurn(t *testing.T) {
	echo := &fakeTool{name: "Echo", run: func(context.Context, json.RawMessage) (tool.Result, error) {
		return tool.Result{Content: []model.Block{model.TextBlock("echoed")}}, nil
	}}
	m := script(call(use("toolu_1", "Echo", `{}`)), say("done"), say("again"))
	h := newHarness(t, m, []tool.Tool{echo}, nil)
	in := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("use the other model")}}, Model: "other-model"}
	for _, err := range h.sess.Run(t.Context(), in) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.run(t, t.Context(), "and now the usual one"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Requests() {
		got = append(got, r.Model)
	}
	if diff := cmp.Diff([]string{"other-model", "other-model", "test-model"}, got); diff != "" {
		t.Errorf("request models (-want +got):\n%s", diff)
	}
}
