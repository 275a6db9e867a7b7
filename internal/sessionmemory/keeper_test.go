package sessionmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// shell stands for Bash: it records that it ran.
type shell struct{ ran *int }

func (shell) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Bash", Description: "runs a command", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (shell) ReadOnly(json.RawMessage) bool        { return false }
func (shell) Destructive(json.RawMessage) bool     { return true }
func (shell) ConcurrencySafe(json.RawMessage) bool { return false }
func (s shell) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	*s.ran++
	return tool.Text("ran"), nil
}

// fixture is a Keeper over a temporary session folder.
type fixture struct {
	k     *Keeper
	path  string
	cwd   string
	m     *modeltest.Scripted
	tools *tool.Registry
	ran   int // Bash runs
	mu    sync.Mutex
	warns []string
}

func newFixture(t *testing.T, reply func(ctx context.Context, n int, req *model.Request) ([]model.Block, error), mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{cwd: t.TempDir(), m: &modeltest.Scripted{Answer: reply}}
	f.path = Path(filepath.Join(t.TempDir(), "session-1"))
	reg, err := tool.NewRegistry(shell{&f.ran}, tools.Read{}, tools.Edit{}, tools.Write{})
	if err != nil {
		t.Fatal(err)
	}
	f.tools = reg
	cfg := Config{Path: f.path, Model: f.m, ModelName: "test-model", MaxTokens: 1000, Lookup: reg.Lookup, Cwd: f.cwd,
		Warn: func(w string) { f.mu.Lock(); f.warns = append(f.warns, w); f.mu.Unlock() }}
	if mod != nil {
		mod(&cfg)
	}
	f.k = New(cfg)
	t.Cleanup(f.k.Close)
	return f
}

func (f *fixture) warnings() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.warns...)
}

// respond tells the Keeper of a main-conversation response that left the
// context at size tokens, with calls tool calls, and waits for an update
// it started.
func (f *fixture) respond(t *testing.T, size int64, calls int) {
	t.Helper()
	f.k.AfterResponse(t.Context(), f.request(), response(size, calls), []string{fmt.Sprint("uuid-", size)})
	if err := f.k.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// request is a main-conversation request, as the engine sends it.
func (f *fixture) request() *model.Request {
	return &model.Request{
		Model: "test-model", MaxTokens: 1000,
		System:            []model.SystemBlock{{Text: "You are cairn.", Cache: true}},
		Tools:             f.tools.Specs(),
		ContextManagement: json.RawMessage(`{"edits":[{"type":"clear_tool_uses_20250919"}]}`),
		Betas:             []string{"context-management-2025-06-27"},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{model.TextBlock("please fix the bug")}, IDs: []string{"u1"}},
			{Role: model.RoleAssistant, Content: []model.Block{use("toolu_0", "Read", `{"file_path":"/x"}`)}, IDs: []string{"a1"}},
			{Role: model.RoleUser, Content: []model.Block{cached(model.ToolResultBlock("toolu_0", "package x", false))}, IDs: []string{"r1"}},
		},
	}
}

func cached(b model.Block) model.Block {
	b.Extra = map[string]json.RawMessage{"cache_control": model.CacheControl}
	return b
}

func response(size int64, calls int) *model.Response {
	r := &model.Response{Usage: model.Usage{InputTokens: 10, CacheReadInputTokens: size - 60, OutputTokens: 50}}
	for i := range calls {
		r.Content = append(r.Content, use(fmt.Sprint("toolu_", i+1), "Read", `{"file_path":"/y"}`))
	}
	if calls == 0 {
		r.Content = []model.Block{model.TextBlock("Fixed.")}
	}
	return r
}

func use(id, name, input string) model.Block {
	return model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

func editInput(path, old, new string) string {
	b, _ := json.Marshal(map[string]string{"file_path": path, "old_string": old, "new_string": new})
	return string(b)
}

// worklogLine is the template's description of Worklog, which an edit can
// name to add a line below it.
const worklogLine = "_One terse line per step taken, oldest first_"

// noter is a fork that adds line to the Worklog, then stops.
func noter(path, line string) func(context.Context, int, *model.Request) ([]model.Block, error) {
	return func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if lastIsResult(req) {
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		return []model.Block{use("toolu_e", "Edit", editInput(path, worklogLine, worklogLine+"\n- "+line))}, nil
	}
}

func lastIsResult(req *model.Request) bool {
	last := req.Messages[len(req.Messages)-1]
	return last.Content[len(last.Content)-1].Type == model.BlockToolResult
}

func TestThresholds(t *testing.T) {
	var f *fixture
	f = newFixture(t, func(ctx context.Context, n int, req *model.Request) ([]model.Block, error) {
		return noter(f.path, fmt.Sprint("step ", n))(ctx, n, req)
	}, nil)
	for i, step := range []struct {
		size  int64
		calls int
		want  int // updates so far
	}{
		{9_000, 0, 0},  // under 10,000
		{10_500, 2, 0}, // at 10,000 but two calls and no pause
		{10_600, 0, 1}, // a pause: the first update
		{12_000, 0, 1}, // only 1,400 more
		{15_700, 1, 1}, // 5,100 more, one call
		{15_800, 1, 1}, // two calls
		{15_900, 1, 2}, // three calls
		{21_000, 1, 2}, // 5,100 more, one call
		{21_100, 0, 3}, // and a pause
		{23_000, 1, 3}, // 1,900 more
		{12_000, 1, 3}, // compacted: the 1,900 seen are kept
		{15_000, 0, 3}, // 4,900
		{15_200, 0, 4}, // 5,100
	} {
		f.respond(t, step.size, step.calls)
		if got := f.k.Stats().Updates; got != step.want {
			t.Fatalf("step %d (%d tokens, %d calls): %d updates, want %d", i, step.size, step.calls, got, step.want)
		}
	}
	if n := len(f.m.Requests()); n != 8 {
		t.Errorf("%d fork requests for 4 updates (an Edit and a closing answer each)", n)
	}
}

// TestBatchThreshold: with Thresholds.At the notes are updated once per
// context, however it grows, until a compaction shrinks it — or until it
// grew by another quarter of At, the compaction having not happened.
func TestBatchThreshold(t *testing.T) {
	var f *fixture
	f = newFixture(t, func(ctx context.Context, n int, req *model.Request) ([]model.Block, error) {
		return noter(f.path, fmt.Sprint("step ", n))(ctx, n, req)
	}, func(c *Config) { c.Thresholds.At = 40_000 })
	for i, step := range []struct {
		size int64
		want int // updates so far
	}{
		{10_000, 0}, {30_000, 0}, // every 5,000 tokens no longer matters
		{41_000, 1},              // the batch
		{45_000, 1}, {50_000, 1}, // once
		{12_000, 1}, // compacted
		{39_000, 1},
		{40_500, 2}, // the next batch
		{50_400, 2}, // 9,900 more: not yet
		{50_600, 3}, // a quarter of At more: the compaction did not happen
	} {
		f.respond(t, step.size, 1)
		if got := f.k.Stats().Updates; got != step.want {
			t.Fatalf("step %d (%d tokens): %d updates, want %d", i, step.size, got, step.want)
		}
	}
}

// TestForkPrefix checks the fork repeats the main request — system
// prompt, tools, messages — and only appends its instruction.
func TestForkPrefix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls int
	}{{"after tool calls", 3}, {"after a final answer", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.m.Answer = noter(f.path, "x")
			req := f.request()
			resp := response(20_000, tc.calls)
			f.k.AfterResponse(t.Context(), req, resp, []string{"a2"})
			if err := f.k.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			fork := f.m.Requests()[0]
			if diff := cmp.Diff(req.System, fork.System); diff != "" {
				t.Errorf("system differs:\n%s", diff)
			}
			if diff := cmp.Diff(req.Tools, fork.Tools); diff != "" {
				t.Errorf("tools differ:\n%s", diff)
			}
			if string(fork.ContextManagement) != string(req.ContextManagement) || !slices.Equal(fork.Betas, req.Betas) {
				t.Errorf("context management %s %q, want the main request's", fork.ContextManagement, fork.Betas)
			}
			want := f.request().Messages
			if tc.calls == 0 {
				want = append(want, model.Message{Role: model.RoleAssistant, Content: resp.Content})
			}
			got := fork.Messages
			// Every block of the main request is sent again unchanged, the
			// breakpoint included; the instruction is the last block.
			for i, m := range want {
				n := len(m.Content)
				if diff := cmp.Diff(m.Content, got[i].Content[:n], cmp.Comparer(rawEqual)); diff != "" || got[i].Role != m.Role {
					t.Errorf("message %d differs:\n%s", i, diff)
				}
			}
			last := got[len(got)-1]
			instr := last.Content[len(last.Content)-1]
			if !strings.Contains(instr.Text, "update the session notes") || !strings.Contains(instr.Text, f.path) {
				t.Errorf("the instruction is not last: %+v", instr)
			}
			if _, ok := instr.Extra["cache_control"]; !ok {
				t.Error("the fork's request has no breakpoint at its tail")
			}
			wantCovered := "r1"
			if tc.calls == 0 {
				wantCovered = "a2"
			}
			_, covered, err := f.k.Summary(t.Context())
			if err != nil || covered != wantCovered {
				t.Errorf("covered %q (%v), want %q", covered, err, wantCovered)
			}
		})
	}
}

func rawEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

// TestGateRefusesAllButTheNotes has the fork try a shell command, another
// file and a Write of the notes before its Edit: only the Edit happens.
func TestGateRefusesAllButTheNotes(t *testing.T) {
	var f *fixture
	other := ""
	f = newFixture(t, func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
		switch n {
		case 0:
			return []model.Block{
				use("t1", "Bash", `{"command":"touch /tmp/pwned"}`),
				use("t2", "Edit", editInput(other, "", "pwned")),
				use("t3", "Write", fmt.Sprintf(`{"file_path":%q,"content":"all gone"}`, f.path)),
				use("t4", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(filepath.Dir(f.path), "..", "..", "secret"))),
				use("t5", "Edit", editInput(f.path, worklogLine, worklogLine+"\n- fixed the bug")),
			}, nil
		case 1:
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		return nil, errors.New("no more replies")
	}, nil)
	other = filepath.Join(f.cwd, "main.go")
	if err := f.k.Extract(t.Context(), nil); err == nil {
		t.Fatal("Extract with no conversation and no fallback succeeded")
	}
	f.k.AfterResponse(t.Context(), f.request(), response(20_000, 0), []string{"a2"})
	if err := f.k.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.ran != 0 {
		t.Error("the fork ran Bash")
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("the fork created another file")
	}
	notes, _ := f.k.Read()
	if !strings.Contains(notes, "- fixed the bug") || strings.Contains(notes, "all gone") {
		t.Errorf("notes:\n%s", notes)
	}
	reqs := f.m.Requests()
	results := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	for i, r := range results[:4] {
		if r.IsError == nil || !*r.IsError || !strings.Contains(r.ResultText(), "only Read and Edit of "+f.path+" are allowed") {
			t.Errorf("call %d was not refused: %s", i+1, r.ResultText())
		}
	}
	if r := results[4]; r.IsError != nil && *r.IsError {
		t.Errorf("the edit of the notes was refused: %s", r.ResultText())
	}
}

func TestGate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session-memory", "summary.md")
	gate := Gate(path)
	for _, tc := range []struct {
		name, tool, input string
		allow             bool
	}{
		{"read the notes", "Read", fmt.Sprintf(`{"file_path":%q}`, path), true},
		{"edit the notes", "Edit", editInput(path, "a", "b"), true},
		{"edit through ..", "Edit", editInput(filepath.Join(dir, "session-memory", "..", "session-memory", "summary.md"), "a", "b"), true},
		{"write the notes", "Write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, path), false},
		{"edit another file", "Edit", editInput(filepath.Join(dir, "other.md"), "a", "b"), false},
		{"read another file", "Read", `{"file_path":"/etc/passwd"}`, false},
		{"relative path", "Edit", editInput("session-memory/summary.md", "a", "b"), false},
		{"shell", "Bash", `{"command":"cat /etc/passwd"}`, false},
		{"bad input", "Edit", `{"file_path":`, false},
		{"other tool", "WebFetch", `{"url":"https://example.com"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := gate(t.Context(), nil, use("t", tc.tool, tc.input))
			if v.Allow != tc.allow {
				t.Errorf("allow = %v (%s), want %v", v.Allow, v.Reason, tc.allow)
			}
		})
	}
	t.Run("symbolic link", func(t *testing.T) {
		write(t, filepath.Join(dir, "elsewhere.md"), "x")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "elsewhere.md"), path); err != nil {
			t.Fatal(err)
		}
		if v := gate(t.Context(), nil, use("t", "Edit", editInput(path, "x", "y"))); v.Allow {
			t.Error("an edit through a symbolic link was allowed")
		}
	})
}

// TestOneAtATime starts an update, sends more due responses while it runs,
// cancels the turn that started it, and checks it finishes and no second
// one starts.
func TestOneAtATime(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	var f *fixture
	f = newFixture(t, func(ctx context.Context, n int, req *model.Request) ([]model.Block, error) {
		if lastIsResult(req) {
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []model.Block{use("e", "Edit", editInput(f.path, worklogLine, worklogLine+fmt.Sprintf("\n- update %d", n)))}, nil
	}, nil)
	turn, endTurn := context.WithCancel(t.Context())
	f.k.AfterResponse(turn, f.request(), response(20_000, 0), []string{"a"})
	<-started
	endTurn() // the turn ends; the update goes on
	for _, size := range []int64{30_000, 40_000} {
		f.k.AfterResponse(t.Context(), f.request(), response(size, 0), []string{"b"}) // due, but one is running
	}
	close(release)
	if err := f.k.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.k.Stats(); got.Updates != 1 || got.Failures != 0 {
		t.Fatalf("stats %+v, want one update", got)
	}
	if len(started) != 0 {
		t.Fatal("a second update started while one was running")
	}
	// The next due response starts the next one.
	f.k.AfterResponse(t.Context(), f.request(), response(50_000, 0), []string{"c"})
	<-started
	if err := f.k.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	notes, _ := f.k.Read()
	if strings.Count(notes, "- update") != 2 {
		t.Errorf("notes:\n%s", notes)
	}
}

// TestUserEditsTheNotes: an update starts from the file as the user left
// it, and an edit the user makes while the fork works makes the fork read
// the file again rather than overwrite it.
func TestUserEditsTheNotes(t *testing.T) {
	var f *fixture
	userLine := "- USER: remember the staging database is read-only"
	f = newFixture(t, func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
		switch n {
		case 0:
			if !strings.Contains(lastText(req), "- USER: the deadline is Friday") {
				return nil, errors.New("the update did not start from the user's notes")
			}
			// The user edits the file while the fork is thinking.
			notes, _ := os.ReadFile(f.path)
			write(t, f.path, strings.Replace(string(notes), worklogLine, worklogLine+"\n"+userLine, 1))
			return []model.Block{use("e1", "Edit", editInput(f.path, worklogLine, worklogLine+"\n- fork: first try"))}, nil
		case 1:
			return []model.Block{use("r", "Read", fmt.Sprintf(`{"file_path":%q}`, f.path))}, nil
		case 2:
			return []model.Block{use("e2", "Edit", editInput(f.path, userLine, userLine+"\n- fork: second try"))}, nil
		}
		return []model.Block{model.TextBlock("Updated.")}, nil
	}, nil)
	write(t, f.path, strings.Replace(DefaultTemplate, "_What the user asked for", "- USER: the deadline is Friday\n_What the user asked for", 1))
	f.respond(t, 20_000, 0)
	notes, _ := f.k.Read()
	for _, want := range []string{"- USER: the deadline is Friday", userLine, "- fork: second try"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "first try") {
		t.Error("the fork's edit of a stale read went through")
	}
	res := f.m.Requests()[1].Messages
	if r := res[len(res)-1].Content[0]; !strings.Contains(r.ResultText(), "modified since") {
		t.Errorf("first edit's result: %s", r.ResultText())
	}
}

func lastText(req *model.Request) string {
	last := req.Messages[len(req.Messages)-1]
	return last.Content[len(last.Content)-1].Text
}

func TestFailuresAreNotices(t *testing.T) {
	t.Run("error", func(t *testing.T) {
		f := newFixture(t, func(context.Context, int, *model.Request) ([]model.Block, error) {
			return nil, &model.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
		}, nil)
		f.respond(t, 20_000, 0)
		checkNotice(t, f, "Overloaded")
	})
	t.Run("timeout", func(t *testing.T) {
		f := newFixture(t, func(ctx context.Context, _ int, _ *model.Request) ([]model.Block, error) {
			<-ctx.Done() // the model never answers
			return nil, ctx.Err()
		}, func(c *Config) { c.Timeout = 1 }) // 1ns: out of time at once
		f.respond(t, 20_000, 0)
		checkNotice(t, f, "took longer than")
	})
	t.Run("no Edit tool", func(t *testing.T) {
		f := newFixture(t, nil, nil)
		req := f.request()
		req.Tools = req.Tools[:1] // Bash only
		f.k.AfterResponse(t.Context(), req, response(20_000, 0), nil)
		f.k.AfterResponse(t.Context(), req, response(30_000, 0), nil)
		if n := len(f.m.Requests()); n != 0 {
			t.Errorf("%d requests without an Edit tool", n)
		}
		if w := f.warnings(); len(w) != 1 || !strings.Contains(w[0], "no Edit tool") {
			t.Errorf("warnings %q", w)
		}
	})
}

// TestNothingUsable: an update after which the notes are unchanged (an
// empty reply, text only, a refused tool) failed: the notes do not
// cover what it was shown, a run of such failures is said once, and the
// batch is tried again a quarter of At later, not at every response.
func TestNothingUsable(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply []model.Block
	}{
		{"empty reply", nil},
		{"text only", []model.Block{model.TextBlock("The notes are up to date.")}},
		{"another tool", []model.Block{use("toolu_b", "Bash", `{"command":"touch /tmp/x"}`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f *fixture
			f = newFixture(t, func(ctx context.Context, n int, req *model.Request) ([]model.Block, error) {
				if n < 2 { // the first update: an Edit, then a closing answer
					return noter(f.path, "the first update works")(ctx, n, req)
				}
				return tt.reply, nil
			}, func(c *Config) { c.Thresholds.At = 40_000 })
			f.respond(t, 41_000, 0)
			if _, covered, _ := f.k.Summary(t.Context()); covered != "uuid-41000" {
				t.Fatalf("after a good update the notes cover %q", covered)
			}
			for _, size := range []int64{51_000, 52_000, 61_000} {
				f.respond(t, size, 0)
			}
			if got := f.k.Stats(); got != (Stats{Updates: 1, Failures: 2}) {
				t.Errorf("stats %+v, want 1 update and 2 failures (at 51,000 and 61,000, not at 52,000)", got)
			}
			if _, covered, _ := f.k.Summary(t.Context()); covered != "uuid-41000" {
				t.Errorf("the notes cover %q after updates that captured nothing, want uuid-41000", covered)
			}
			if w := f.warnings(); len(w) != 1 || !strings.Contains(w[0], "without editing the notes") {
				t.Errorf("warnings %q, want one line", w)
			}
			if f.ran != 0 {
				t.Errorf("Bash ran %d times while updating the notes", f.ran)
			}
		})
	}
}

func checkNotice(t *testing.T, f *fixture, want string) {
	t.Helper()
	if got := f.k.Stats(); got.Failures != 1 || got.Updates != 0 {
		t.Errorf("stats %+v", got)
	}
	w := f.warnings()
	if len(w) != 1 || !strings.Contains(w[0], want) || !strings.Contains(w[0], "the conversation goes on") {
		t.Errorf("warnings %q, want one about %q", w, want)
	}
	summary, _, err := f.k.Summary(t.Context())
	if err != nil || summary != "" {
		t.Errorf("notes after a failed first update: %q, %v", summary, err)
	}
}

func TestBudgetEnforcedAfterUpdate(t *testing.T) {
	long := strings.Repeat("- ran go test ./... and read its output line by line\n", 800) // about 10,600 tokens
	var f *fixture
	f = newFixture(t, func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if lastIsResult(req) {
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		return []model.Block{use("e", "Edit", editInput(f.path, worklogLine, worklogLine+"\n"+long))}, nil
	}, nil)
	f.respond(t, 20_000, 0)
	notes, _ := f.k.Read()
	full, err := os.ReadFile(fullPath(f.path))
	if err != nil {
		t.Fatalf("the full text was not kept aside: %v", err)
	}
	if !strings.Contains(string(full), long) {
		t.Error("the full text lacks the cut part")
	}
	worklog := parse(notes)[len(parse(notes))-1]
	if n := int64(len(worklog.body)) / 4; n > MaxSectionTokens {
		t.Errorf("Worklog holds about %d tokens after the update", n)
	}
	if !strings.Contains(worklog.body, fullPath(f.path)) {
		t.Errorf("the cut section does not point to the full text:\n%.200s", worklog.body[len(worklog.body)-200:])
	}
}

func TestSummary(t *testing.T) {
	release := make(chan struct{})
	var f *fixture
	f = newFixture(t, func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if lastIsResult(req) {
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		<-release
		return []model.Block{use("e", "Edit", editInput(f.path, worklogLine, worklogLine+"\n- THE-NOTE"))}, nil
	}, nil)
	if s, covered, err := f.k.Summary(t.Context()); s != "" || covered != "" || err != nil {
		t.Fatalf("no notes yet: %q %q %v", s, covered, err)
	}
	write(t, f.path, DefaultTemplate) // the template alone is empty notes
	if s, _, _ := f.k.Summary(t.Context()); s != "" {
		t.Fatalf("template-only notes are not empty: %q", s)
	}
	f.k.AfterResponse(t.Context(), f.request(), response(20_000, 0), []string{"a9"})
	done := make(chan string)
	go func() {
		s, covered, err := f.k.Summary(t.Context()) // waits for the update under way
		if err != nil {
			t.Error(err)
		}
		done <- s + "|" + covered
	}()
	close(release)
	got := <-done
	if !strings.Contains(got, "- THE-NOTE") || !strings.HasSuffix(got, "|a9") {
		t.Errorf("summary %q", got)
	}
}

// TestFailedFirstUpdateCoversNothing: an update that edited the notes
// and then failed (its closing request, here) leaves notes that no
// update of this process brought up to date: they do not stand as a
// summary, which would take them to cover the whole conversation.
func TestFailedFirstUpdateCoversNothing(t *testing.T) {
	var f *fixture
	f = newFixture(t, func(ctx context.Context, n int, req *model.Request) ([]model.Block, error) {
		if n == 0 {
			return noter(f.path, "half an update")(ctx, n, req)
		}
		return nil, &model.APIError{Status: 500, Type: "api_error", Message: "Internal server error"}
	}, nil)
	f.respond(t, 20_000, 0)
	if notes, _ := f.k.Read(); !strings.Contains(notes, "half an update") {
		t.Fatalf("the edit did not land: %q", notes)
	}
	if s, covered, err := f.k.Summary(t.Context()); s != "" || covered != "" || err != nil {
		t.Errorf("Summary = %q, %q, %v: want no summary from notes no update finished", s, covered, err)
	}
}

// TestStalledUpdateWaitedForOnce: compaction waits Config.Wait for an
// update under way; an update still stalled after that is not waited for
// again, so it holds up one request, not every one until it times out.
// In a synctest bubble: the wait is the minute configured, to the
// nanosecond, and takes no time.
func TestStalledUpdateWaitedForOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = time.Minute
		release := make(chan struct{})
		f := newFixture(t, func(ctx context.Context, _ int, _ *model.Request) ([]model.Block, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, errors.New("stalled")
		}, func(c *Config) { c.Wait = wait })
		defer close(release)
		f.k.AfterResponse(t.Context(), f.request(), response(20_000, 0), []string{"a9"})
		start := time.Now()
		if _, _, err := f.k.Summary(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != wait {
			t.Errorf("the first Summary returned after %s, want the Wait of %s", d, wait)
		}
		// The second must not wait: a context that is already done would
		// make a wait fail at once.
		done, cancel := context.WithCancel(t.Context())
		cancel()
		start = time.Now()
		if _, _, err := f.k.Summary(done); err != nil {
			t.Errorf("the second Summary waited for the stalled update again: %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the second Summary took %s", d)
		}
	})
}

func TestExtract(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.m.Answer = noter(f.path, "extracted")
	hist := f.request().Messages
	err := f.k.Extract(t.Context(), func(context.Context) (Prefix, error) {
		return HistoryPrefix([]model.SystemBlock{{Text: "You are cairn."}}, f.tools.Specs(), hist), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	notes, _ := f.k.Read()
	if !strings.Contains(notes, "- extracted") {
		t.Errorf("notes:\n%s", notes)
	}
	if _, covered, _ := f.k.Summary(t.Context()); covered != "r1" {
		t.Errorf("covered %q, want r1", covered)
	}
	f.k.Close()
	if err := f.k.Extract(t.Context(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Extract after Close: %v", err)
	}
}

func TestOverrides(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "config", "template.md"), "# Plan\n_the plan_\n")
	write(t, filepath.Join(dir, "config", "prompt.md"), "CUSTOM: keep {{notesPath}} current.\n{{currentNotes}}")
	var f *fixture
	f = newFixture(t, func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if lastIsResult(req) {
			return []model.Block{model.TextBlock("Updated.")}, nil
		}
		if got := lastText(req); got != "CUSTOM: keep "+f.path+" current.\n# Plan\n_the plan_" {
			return nil, fmt.Errorf("prompt %q", got)
		}
		return []model.Block{use("e", "Edit", editInput(f.path, "_the plan_", "_the plan_\n- step one"))}, nil
	}, func(c *Config) { c.ConfigDir = dir })
	f.respond(t, 20_000, 0)
	if w := f.warnings(); len(w) > 0 {
		t.Fatal(w)
	}
	notes, _ := f.k.Read()
	if notes != "# Plan\n_the plan_\n- step one\n" {
		t.Errorf("notes %q", notes)
	}
}
