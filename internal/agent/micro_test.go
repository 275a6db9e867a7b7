package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

var updateMicro = flag.Bool("update", false, "rewrite the golden request bodies in testdata")

// clock is the test's time: it moves only when the test moves it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// reader is a model that reads the project's files one by one with the
// real Read tool: budget more calls, then an answer.
type reader struct {
	mu     sync.Mutex
	cwd    string
	budget int
	calls  int
}

func (r *reader) allow(n int) {
	r.mu.Lock()
	r.budget += n
	r.mu.Unlock()
}

func (r *reader) respond(*modeltest.Request) modeltest.Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls >= r.budget {
		return modeltest.Text("done")
	}
	r.calls++
	in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(r.cwd, fmt.Sprintf("f%02d.txt", r.calls))})
	return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_%02d", r.calls), "Read", string(in))}}
}

type microRig struct {
	srv   *modeltest.Server
	home  session.Home
	cwd   string
	store transcript.Store // nil: the home's file store
	clock *clock
	model *reader
}

func newMicroRig(t *testing.T, k storeKind) *microRig {
	t.Helper()
	r := &microRig{home: session.Home{Dir: t.TempDir()}, cwd: t.TempDir(), store: k.store(), clock: &clock{now: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)}}
	r.model = &reader{cwd: r.cwd}
	for i := 1; i <= 20; i++ {
		var b strings.Builder
		for j := range 40 {
			fmt.Fprintf(&b, "file %02d line %02d: %s\n", i, j, strings.Repeat("x", 80))
		}
		if err := os.WriteFile(filepath.Join(r.cwd, fmt.Sprintf("f%02d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.srv = modeltest.Start(t, modeltest.Config{Respond: r.model.respond, Now: r.clock.Now})
	return r
}

func (r *microRig) open(t *testing.T, o func(*agent.Options)) *agent.Agent {
	t.Helper()
	opts := agent.Options{Home: r.home, Cwd: r.cwd, Store: r.store, ModelName: "claude-test", MaxTokens: 4000,
		Window: tokens.Window{Size: 1_000_000, MaxOutput: 4_000}, Tools: []tool.Tool{tools.Read{}, bigTool{n: 10}},
		Entrypoint: "sdk-cli", Now: r.clock.Now, NewUUID: counter()}
	return openOn(t, r.srv, opts, o)
}

func counter() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
}

// sent returns the messages a request carried, each encoded without its
// cache breakpoint: what the prompt cache compares.
func sent(t *testing.T, r *modeltest.Request) []string {
	t.Helper()
	var out []string
	for _, m := range r.Params.Messages {
		for i := range m.Content {
			delete(m.Content[i].Extra, "cache_control")
		}
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// extends reports whether next starts with every message of prev.
func extends(prev, next []string) bool {
	return len(next) >= len(prev) && cmp.Equal(prev, next[:len(prev)])
}

func prompt(r *modeltest.Request) int64 {
	return r.Usage.InputTokens + r.Usage.CacheReadInputTokens + r.Usage.CacheCreationInputTokens
}

// golden compares a request's messages and context_management, the
// project folder written as /CWD, with testdata/name; given the cairn
// home and the folder that holds the session's folder (projectDir), those
// are written as /HOME and /HOME/projects/PROJECT, which the file store's
// session folder is in, so a golden holds on every store.
func golden(t *testing.T, name string, r *modeltest.Request, cwd string, homeAndProject ...string) {
	t.Helper()
	var body bytes.Buffer
	for _, k := range []string{"messages", "context_management"} {
		if raw, ok := r.Params.Fields[k]; ok {
			fmt.Fprintf(&body, "%s: ", k)
			if err := json.Indent(&body, raw, "", "  "); err != nil {
				t.Fatal(err)
			}
			body.WriteByte('\n')
		}
	}
	got := strings.ReplaceAll(body.String(), cwd, "/CWD")
	if len(homeAndProject) == 2 {
		got = strings.ReplaceAll(got, homeAndProject[1], "/HOME/projects/PROJECT")
		got = strings.ReplaceAll(got, homeAndProject[0], "/HOME")
	}
	path := filepath.Join("testdata", name)
	if *updateMicro {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// boundaries returns the microcompact boundaries of a's transcript.
func boundaries(t *testing.T, a *agent.Agent) []*transcript.MicrocompactMetadata {
	return records(t, a, (*transcript.Entry).IsMicrocompactBoundary, (*transcript.Entry).DecodeMicrocompactMetadata)
}

// records decodes the metadata of each line of a's transcript for which
// is reports true.
func records[T any](t *testing.T, a *agent.Agent, is func(*transcript.Entry) bool, decode func(*transcript.Entry) (*T, error)) []*T {
	t.Helper()
	var out []*T
	for _, e := range storedEntries(t, a) {
		if !is(&e) {
			continue
		}
		md, err := decode(&e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, md)
	}
	return out
}

func ids(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("toolu_%02d", i))
	}
	return out
}

// TestMicroCountTrigger runs twelve Reads with a count trigger of 6 and
// keepRecent 2: results are cleared in two batches, and between batches
// each request extends the one before byte for byte, so the server reads
// all of it from the cache. A resumed session sends the same projection.
func TestMicroCountTrigger(t *testing.T) {
	onStores(t, testMicroCountTrigger)
}

func testMicroCountTrigger(t *testing.T, k storeKind) {
	r := newMicroRig(t, k)
	micro := func(o *agent.Options) {
		o.MicroCompact = compact.MicroConfig{Count: 6, KeepRecent: 2, ClearAtLeast: -1}
	}
	a := r.open(t, micro)
	r.model.allow(12)
	if _, notices, err := run(t, a, "read the files"); err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 13 {
		t.Fatalf("%d requests, want 13", len(reqs))
	}
	// Request k (from 0) carries k results. Batches: at 6 results (1–4
	// cleared), at 10 (5–8).
	for k := 1; k < len(reqs); k++ {
		prev, next := sent(t, reqs[k-1]), sent(t, reqs[k])
		batch := k == 6 || k == 10
		if extends(prev, next) == batch {
			t.Errorf("request %d: extends the previous one = %v, batch = %v", k, !batch, batch)
		}
		read := reqs[k].Usage.CacheReadInputTokens
		if !batch && read != prompt(reqs[k-1]) {
			t.Errorf("request %d read %d tokens from the cache, want the previous prompt's %d", k, read, prompt(reqs[k-1]))
		}
		if batch && read >= prompt(reqs[k-1]) {
			t.Errorf("request %d rewrote the prefix yet read %d tokens from the cache", k, read)
		}
	}
	golden(t, "micro_count_before.golden", reqs[5], r.cwd)
	golden(t, "micro_count_after.golden", reqs[6], r.cwd)

	got := boundaries(t, a)
	if len(got) != 2 {
		t.Fatalf("%d microcompact boundaries, want 2", len(got))
	}
	for i, want := range [][]string{ids(1, 4), ids(5, 8)} {
		if diff := cmp.Diff(want, got[i].CompactedToolIDs); diff != "" || got[i].Trigger != "count" || got[i].TokensSaved <= 0 {
			t.Errorf("boundary %d %+v (-want +got ids):\n%s", i, got[i], diff)
		}
	}
	last := sent(t, reqs[len(reqs)-1])
	s := checkResumedView(t, a, reqs[len(reqs)-1])
	if s.Micro.Count != 2 || s.Micro.Tokens != got[0].TokensSaved+got[1].TokensSaved {
		t.Errorf("savings %+v, want the two clearings' %d", s.Micro, got[0].TokensSaved+got[1].TokensSaved)
	}
	// What the clearings cost: the cache writes of the requests after
	// them, the first of which is reqs[6].
	if first := reqs[6].Usage.CacheCreationInputTokens; first == 0 || s.Micro.Writes < first {
		t.Errorf("cache writes after the clearings %d, want at least the %d of the request after the first", s.Micro.Writes, first)
	}
	a.Close()

	// Resumed, the session sends the same cleared results: the prefix is
	// read from the cache whole.
	b := r.open(t, func(o *agent.Options) { micro(o); o.Continue = true })
	if _, _, err := run(t, b, "and now?"); err != nil {
		t.Fatal(err)
	}
	resumed := r.srv.Requests()[len(reqs)]
	if !extends(last, sent(t, resumed)) {
		t.Error("the resumed request does not extend the last one sent before the resume")
	}
	if read := resumed.Usage.CacheReadInputTokens; read != prompt(reqs[len(reqs)-1]) {
		t.Errorf("the resumed request read %d tokens from the cache, want %d", read, prompt(reqs[len(reqs)-1]))
	}
	golden(t, "micro_resumed.golden", resumed, r.cwd)
	if n := len(boundaries(t, b)); n != 2 {
		t.Errorf("%d boundaries after the resume, want still 2", n)
	}
}

// TestMicroTimeTrigger: a request an hour after the last one finds the
// cache cold and clears all but the newest results; half an hour is not
// enough.
func TestMicroTimeTrigger(t *testing.T) {
	onStores(t, testMicroTimeTrigger)
}

func testMicroTimeTrigger(t *testing.T, k storeKind) {
	for _, tt := range []struct {
		name    string
		away    time.Duration
		cleared []string
	}{
		{"cache warm", 30 * time.Minute, nil},
		{"cache cold", 61 * time.Minute, ids(1, 3)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newMicroRig(t, k)
			opts := func(o *agent.Options) { o.MicroCompact = compact.MicroConfig{KeepRecent: 2} }
			a := r.open(t, opts)
			r.model.allow(5)
			if _, _, err := run(t, a, "read five"); err != nil {
				t.Fatal(err)
			}
			n := len(r.srv.Requests())
			r.clock.advance(tt.away)
			if _, _, err := run(t, a, "anything new?"); err != nil {
				t.Fatal(err)
			}
			first := r.srv.Requests()[n]
			var cleared []string
			for _, m := range first.Params.Messages {
				for _, b := range m.Content {
					if b.Type == model.BlockToolResult && b.ResultText() == compact.ClearedText {
						cleared = append(cleared, b.ToolUseID)
					}
				}
			}
			if diff := cmp.Diff(tt.cleared, cleared); diff != "" {
				t.Errorf("cleared (-want +got):\n%s", diff)
			}
			md := boundaries(t, a)
			if tt.cleared == nil {
				if len(md) != 0 {
					t.Errorf("boundaries %+v", md)
				}
				return
			}
			if len(md) != 1 || md[0].Trigger != "time" {
				t.Fatalf("boundaries %+v, want one time boundary", md)
			}
			// A resume right after sends the same projection, and does not
			// take the time since for a new gap.
			a.Close()
			b := r.open(t, func(o *agent.Options) { opts(o); o.Continue = true })
			if _, _, err := run(t, b, "go on"); err != nil {
				t.Fatal(err)
			}
			reqs := r.srv.Requests()
			if !extends(sent(t, reqs[len(reqs)-2]), sent(t, reqs[len(reqs)-1])) {
				t.Error("the resumed request rewrote the prefix")
			}
			if len(boundaries(t, b)) != 1 {
				t.Error("the resume cleared again")
			}
		})
	}
}

// TestMicroServerSide: with a provider that clears server-side, a warm
// cache's prefix is never rewritten client-side; each request asks the
// server to clear, and the server does, reading the rest from its cache.
func TestMicroServerSide(t *testing.T) {
	onStores(t, testMicroServerSide)
}

func testMicroServerSide(t *testing.T, k storeKind) {
	r := newMicroRig(t, k)
	a := r.open(t, func(o *agent.Options) {
		o.ContextManagement = true
		o.EarlyCompactAt = -1 // server-side clearing is what is tested
		o.MicroCompact = compact.MicroConfig{KeepRecent: 2, ServerTrigger: 4_000, ClearAtLeast: -1}
	})
	r.model.allow(8)
	if _, notices, err := run(t, a, "read eight"); err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	reqs := r.srv.Requests()
	var exclude []string
	for _, n := range reqs[0].Params.ToolNames() {
		if !slices.Contains(compact.Compactable(a.Tools()), n) {
			exclude = append(exclude, n)
		}
	}
	names, _ := json.Marshal(exclude)
	want := `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":4000},"keep":{"type":"tool_uses","value":2},"exclude_tools":` + string(names) + `}]}`
	applied := 0
	for k, req := range reqs {
		if k == 0 {
			if req.Params.ContextManagement != nil {
				t.Errorf("request 0 asks to clear with no tool results yet: %s", req.Params.ContextManagement)
			}
			continue
		}
		if got := string(req.Params.ContextManagement); got != want {
			t.Errorf("request %d context_management\n got %s\nwant %s", k, got, want)
		}
		if !strings.Contains(strings.Join(req.Betas, ","), compact.ContextManagementBeta) {
			t.Errorf("request %d betas %q", k, req.Betas)
		}
		if !extends(sent(t, reqs[k-1]), sent(t, req)) {
			t.Errorf("request %d rewrote the prefix client-side", k)
		}
		if req.Usage.CacheReadInputTokens == 0 {
			t.Errorf("request %d read nothing from the cache", k)
		}
		if len(req.ContextEdits) > 0 {
			applied++
			if e := req.ContextEdits[0]; e.ClearedToolUses != k-2 || e.ClearedInputTokens <= 0 {
				t.Errorf("request %d: the server cleared %+v, want all but the newest 2 of %d", k, e, k)
			}
		}
	}
	if applied == 0 {
		t.Error("the server never cleared")
	}
	golden(t, "micro_server.golden", reqs[len(reqs)-1], r.cwd)
	if md := boundaries(t, a); len(md) != 0 {
		t.Errorf("client-side boundaries %+v while the cache was warm", md)
	}
}

// fetcher answers with n bytes of numbered lines.
type fetcher struct{ n int }

func (fetcher) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Fetch", Description: "fetches", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (fetcher) ReadOnly(json.RawMessage) bool        { return true }
func (fetcher) Destructive(json.RawMessage) bool     { return false }
func (fetcher) ConcurrencySafe(json.RawMessage) bool { return true }
func (f fetcher) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	var b strings.Builder
	for i := 0; b.Len() < f.n; i++ {
		fmt.Fprintf(&b, "fetched row %05d %s\n", i, strings.Repeat("y", 60))
	}
	r := tool.Text(b.String())
	r.Detail = map[string]any{"bytes": b.Len(), "url": "https://example.test"}
	return r, nil
}

// TestLargeResultOverHTTP: a 120 KB result reaches the model as a preview
// naming its file; the model reads the file back with Read and gets it all.
func TestLargeResultOverHTTP(t *testing.T) {
	onStores(t, testLargeResultOverHTTP)
}

func testLargeResultOverHTTP(t *testing.T, k storeKind) {
	var path string
	step := 0
	srv := modeltest.Start(t, modeltest.Config{Respond: func(req *modeltest.Request) modeltest.Reply {
		step++
		switch step {
		case 1:
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_big", "Fetch", `{}`)}}
		case 2:
			m := regexp.MustCompile(`Full output saved to: ([^\s\\"]+)`).FindSubmatch(req.Body)
			if m == nil {
				return modeltest.Text("no preview")
			}
			path = string(m[1])
			in, _ := json.Marshal(map[string]string{"file_path": path})
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", string(in))}}
		}
		return modeltest.Text("done")
	}})
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
	a, err := agent.Open(t.Context(), agent.Options{Home: home, Cwd: cwd, Store: k.store(), Model: m, ModelName: "claude-test", MaxTokens: 4000,
		Tools: []tool.Tool{fetcher{n: 120_000}, tools.Read{}}, Entrypoint: "sdk-cli"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, _, err := run(t, a, "fetch it"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || path == "" {
		t.Fatalf("%d requests, path %q", len(reqs), path)
	}
	if want := filepath.Join(a.SessionDir(), "tool-results", "toolu_big.txt"); path != want {
		t.Errorf("saved to %s, want %s", path, want)
	}
	if names := sidecarNames(t, a, "tool-results/"); !slices.Equal(names, []string{"tool-results/toolu_big.txt"}) {
		t.Errorf("results stored beside the transcript: %q, want the one too large to send", names)
	}
	if b := storedSidecar(t, a, "tool-results/toolu_big.txt"); len(b) < 120_000 || !bytes.Contains(b, []byte("fetched row 01500")) {
		t.Errorf("the store keeps %d bytes of the result beside the transcript", len(b))
	}
	if n := len(reqs[1].Body); n > 10_000 {
		t.Errorf("the request after the big result is %d bytes: the result was not replaced", n)
	}
	if !bytes.Contains(reqs[1].Body, []byte(`<persisted-output>\nOutput too large (117.2KB). Full output saved to: `)) {
		t.Errorf("no preview in %s", reqs[1].Body)
	}
	// Read gave it all back.
	if !bytes.Contains(reqs[2].Body, []byte("fetched row 01500")) {
		t.Error("the file read back does not reach the model")
	}
	// The transcript's toolUseResult names the file.
	for _, e := range storedEntries(t, a) {
		if len(e.ToolUseResult) == 0 || !bytes.Contains(e.Message, []byte("toolu_big")) {
			continue
		}
		var d struct {
			URL  string `json:"url"`
			Path string `json:"persistedOutputPath"`
			Size int    `json:"persistedOutputSize"`
		}
		if err := json.Unmarshal(e.ToolUseResult, &d); err != nil || d.Path != path || d.Size < 120_000 || d.URL == "" {
			t.Errorf("toolUseResult %s", e.ToolUseResult)
		}
		return
	}
	t.Error("no result line for toolu_big")
}

// TestMicroAcrossCompaction: micro-compaction and auto-compaction work
// together — the compactions free what they must (the preserved tail is
// measured as it will be sent: a compaction forgets what was cleared) —
// and a session resumed after them sends what the live one sent.
func TestMicroAcrossCompaction(t *testing.T) {
	onStores(t, testMicroAcrossCompaction)
}

func testMicroAcrossCompaction(t *testing.T, k storeKind) {
	r := newMicroRig(t, k)
	var mu sync.Mutex
	calls := 0
	r.srv = modeltest.Start(t, modeltest.Config{Now: r.clock.Now, Respond: func(req *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if isSummaryRequest(req) {
			return modeltest.Text("<summary>the files were read</summary>")
		}
		if calls == 24 {
			return modeltest.Text("done")
		}
		calls++
		id := fmt.Sprintf("toolu_%02d", calls)
		if calls%2 == 0 { // Big's results are not compactable: the context grows
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, "Big", `{}`)}}
		}
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(r.cwd, fmt.Sprintf("f%02d.txt", (calls+1)/2))})
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, "Read", string(in))}}
	}})
	opts := func(o *agent.Options) {
		o.Window = tokens.Window{Size: 40_000, MaxOutput: 4_000} // compacts at 23,000
		o.Tools = []tool.Tool{tools.Read{}, bigTool{n: 2000}}
		o.MicroCompact = compact.MicroConfig{Count: 3, KeepRecent: 1, ClearAtLeast: -1}
	}
	a := r.open(t, opts)
	compactions, notices, err := run(t, a, "read and print")
	if err != nil {
		t.Fatalf("run: %v (notices %q)", err, notices)
	}
	if len(compactions) == 0 || len(boundaries(t, a)) == 0 {
		t.Fatalf("%d compactions, %d clearings: the test needs both", len(compactions), len(boundaries(t, a)))
	}
	if len(notices) > 0 {
		t.Errorf("notices %q", notices)
	}
	if _, _, err := run(t, a, "anything else?"); err != nil {
		t.Fatal(err)
	}
	last := r.srv.Last()
	a.Close()

	b := r.open(t, func(o *agent.Options) { opts(o); o.Continue = true })
	if _, _, err := run(t, b, "and now?"); err != nil {
		t.Fatal(err)
	}
	if resumed := r.srv.Last(); !extends(sent(t, last), sent(t, resumed)) || resumed.Usage.CacheReadInputTokens != prompt(last) {
		t.Errorf("the resumed request does not extend the last one sent before the resume (read %d of %d from the cache)", resumed.Usage.CacheReadInputTokens, prompt(last))
	}
}

// checkResumedView checks that compact.Resumed, the view `cairn context`
// measures, holds as many cleared results and folded spans as the last
// request a sent, and returns what the transcript says each layer saved.
func checkResumedView(t *testing.T, a *agent.Agent, last *modeltest.Request) compact.Savings {
	t.Helper()
	conv, err := a.Conversation(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var view strings.Builder
	for _, m := range compact.Resumed(conv) {
		for _, b := range m.Content {
			view.WriteString(b.Text)
			view.Write(b.Content)
		}
	}
	for _, marker := range []string{compact.ClearedText, "[Collapsed: "} {
		want := bytes.Count(last.Body, []byte(marker))
		if got := strings.Count(view.String(), marker); got != want {
			t.Errorf("the resumed view holds %q %d times, the last request %d", marker, got, want)
		}
	}
	return compact.SavingsOf(conv)
}

// TestRewindForgetsLaterClearing: results cleared after the point a
// conversation is rewound to are sent whole again, as a resume of the new
// chain sends them.
func TestRewindForgetsLaterClearing(t *testing.T) {
	onStores(t, testRewindForgetsLaterClearing)
}

func testRewindForgetsLaterClearing(t *testing.T, k storeKind) {
	r := newMicroRig(t, k)
	a := r.open(t, func(o *agent.Options) {
		o.MicroCompact = compact.MicroConfig{Count: 6, KeepRecent: 2, ClearAtLeast: -1}
	})
	r.model.allow(4)
	runAll(t, a, "read four")
	r.model.allow(4)
	runAll(t, a, "read four more")
	if !bytes.Contains(r.srv.Last().Body, []byte(compact.ClearedText)) {
		t.Fatal("the second turn cleared nothing: the test needs it to")
	}
	var point string
	for _, m := range a.History() {
		if m.Role == model.RoleUser && strings.HasPrefix(m.Text(), "read four more") {
			point = m.IDs[0]
		}
	}
	if _, err := a.Rewind(t.Context(), point, false, true); err != nil {
		t.Fatal(err)
	}
	runAll(t, a, "something else")
	if body := r.srv.Last().Body; bytes.Contains(body, []byte(compact.ClearedText)) || !bytes.Contains(body, []byte("file 01 line 00")) {
		t.Error("after the rewind, results cleared on the abandoned branch are still sent cleared")
	}
}
