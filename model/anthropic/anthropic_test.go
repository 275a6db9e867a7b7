package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/itertest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/retry"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// setup starts a fake server and a client for it.
func setup(t testing.TB, cfg modeltest.Config) (*modeltest.Server, *anthropic.Client) {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = "test-key"
	}
	s := modeltest.Start(t, cfg)
	c, err := anthropic.New(anthropic.Config{APIKey: cfg.APIKey, BaseURL: s.URL, Model: "claude-test", HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func userRequest(text string) *model.Request {
	return &model.Request{MaxTokens: 1000, Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}}}}
}

// collect runs a stream to its end.
func collect(m model.Model, ctx context.Context, req *model.Request) ([]model.Chunk, error) {
	var chunks []model.Chunk
	for ch, err := range m.Stream(ctx, req) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, ch)
	}
	return chunks, nil
}

// checkChunks checks the model.Model contract on a complete stream: the
// order of kinds, and that each block's deltas add up to the block its
// ChunkBlockStop carries and the Response holds.
func checkChunks(t *testing.T, chunks []model.Chunk) *model.Response {
	t.Helper()
	if len(chunks) < 2 || chunks[0].Kind != model.ChunkMessageStart || chunks[len(chunks)-1].Kind != model.ChunkDone {
		t.Fatalf("stream does not run from ChunkMessageStart to ChunkDone: %v", kinds(chunks))
	}
	resp := chunks[len(chunks)-1].Response
	deltas := map[int]string{}
	stopped := 0
	for _, ch := range chunks[1 : len(chunks)-1] {
		switch ch.Kind {
		case model.ChunkTextDelta, model.ChunkThinkingDelta, model.ChunkInputDelta:
			deltas[ch.Index] += ch.Text
		case model.ChunkBlockStop:
			b := *ch.Block
			var got string
			switch b.Type {
			case model.BlockText:
				got = b.Text
			case model.BlockThinking:
				got = b.Thinking
			case model.BlockToolUse:
				got = string(b.Input)
				if deltas[ch.Index] == "" {
					got = ""
				}
			}
			if got != deltas[ch.Index] {
				t.Errorf("block %d: deltas add up to %q, the block has %q", ch.Index, deltas[ch.Index], got)
			}
			if d := cmp.Diff(resp.Content[ch.Index], b); d != "" {
				t.Errorf("block %d differs from the Response's (-resp +chunk):\n%s", ch.Index, d)
			}
			stopped++
		}
	}
	if stopped != len(resp.Content) {
		t.Errorf("%d blocks stopped, the Response has %d", stopped, len(resp.Content))
	}
	return resp
}

func kinds(chunks []model.Chunk) []string {
	names := []string{"start", "block_start", "text", "thinking", "input", "block_stop", "done"}
	var out []string
	for _, ch := range chunks {
		out = append(out, fmt.Sprintf("%s:%d", names[ch.Kind], ch.Index))
	}
	return out
}

func TestStream(t *testing.T) {
	sig := map[string]json.RawMessage{"signature": json.RawMessage(`"c2lnbmF0dXJl"`)}
	tests := []struct {
		name      string
		reply     modeltest.Reply
		wantKinds []string
		want      []model.Block
		wantStop  string
	}{
		{
			name:      "text",
			reply:     modeltest.Text("Hello, world! Ünïcödé <ok>"),
			wantKinds: []string{"start:0", "block_start:0", "text:0", "text:0", "text:0", "block_stop:0", "done:0"},
			want:      []model.Block{model.TextBlock("Hello, world! Ünïcödé <ok>")},
			wantStop:  model.StopEndTurn,
		},
		{
			name:      "tool use split across deltas",
			reply:     modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_01", "Read", `{"file_path": "/src/main.go", "limit": 200}`)}},
			wantKinds: []string{"start:0", "block_start:0", "input:0", "input:0", "input:0", "block_stop:0", "done:0"},
			want:      []model.Block{{Type: model.BlockToolUse, ID: "toolu_01", Name: "Read", Input: json.RawMessage(`{"file_path":"/src/main.go","limit":200}`)}},
			wantStop:  model.StopToolUse,
		},
		{
			name: "parallel tool use",
			reply: modeltest.Reply{Content: []model.Block{
				model.TextBlock("Reading both."),
				modeltest.ToolUse("toolu_a", "Read", `{"file_path":"a.go"}`),
				modeltest.ToolUse("toolu_b", "Grep", `{"pattern":"func main"}`),
			}},
			wantKinds: []string{
				"start:0",
				"block_start:0", "text:0", "text:0", "block_stop:0",
				"block_start:1", "input:1", "input:1", "input:1", "block_stop:1",
				"block_start:2", "input:2", "input:2", "input:2", "block_stop:2",
				"done:0",
			},
			want: []model.Block{
				model.TextBlock("Reading both."),
				{Type: model.BlockToolUse, ID: "toolu_a", Name: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: model.BlockToolUse, ID: "toolu_b", Name: "Grep", Input: json.RawMessage(`{"pattern":"func main"}`)},
			},
			wantStop: model.StopToolUse,
		},
		{
			name:      "tool use without input",
			reply:     modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_e", "Now", ``)}},
			wantKinds: []string{"start:0", "block_start:0", "block_stop:0", "done:0"},
			want:      []model.Block{{Type: model.BlockToolUse, ID: "toolu_e", Name: "Now", Input: json.RawMessage(`{}`)}},
			wantStop:  model.StopToolUse,
		},
		{
			name: "thinking",
			reply: modeltest.Reply{Content: []model.Block{
				modeltest.Thinking("Let me think about this.", "c2lnbmF0dXJl"),
				model.TextBlock("Done."),
			}},
			wantKinds: []string{"start:0", "block_start:0", "thinking:0", "thinking:0", "thinking:0", "block_stop:0", "block_start:1", "text:1", "block_stop:1", "done:0"},
			want: []model.Block{
				{Type: model.BlockThinking, Thinking: "Let me think about this.", Extra: sig},
				model.TextBlock("Done."),
			},
			wantStop: model.StopEndTurn,
		},
		{
			name: "redacted thinking and max tokens",
			reply: modeltest.Reply{StopReason: model.StopMaxTokens, Content: []model.Block{
				{Type: model.BlockRedactedThinking, Extra: map[string]json.RawMessage{"data": json.RawMessage(`"opaque"`)}},
			}},
			wantKinds: []string{"start:0", "block_start:0", "block_stop:0", "done:0"},
			want:      []model.Block{{Type: model.BlockRedactedThinking, Extra: map[string]json.RawMessage{"data": json.RawMessage(`"opaque"`)}}},
			wantStop:  model.StopMaxTokens,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := setup(t, modeltest.Config{DeltaBytes: 10})
			s.Enqueue(tt.reply)
			chunks, err := collect(c, t.Context(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantKinds, kinds(chunks)); d != "" {
				t.Errorf("chunks (-want +got):\n%s", d)
			}
			resp := checkChunks(t, chunks)
			if d := cmp.Diff(tt.want, resp.Content); d != "" {
				t.Errorf("content (-want +got):\n%s", d)
			}
			rec := s.Last()
			wantResp := model.Response{ID: "msg_fake000001", Model: "claude-test", StopReason: tt.wantStop, Usage: rec.Usage, RequestID: rec.ID}
			resp.Content = nil
			if d := cmp.Diff(wantResp, *resp); d != "" {
				t.Errorf("response (-want +got):\n%s", d)
			}
			if chunks[0].ID != "msg_fake000001" || chunks[0].Model != "claude-test" {
				t.Errorf("message start = %+v", chunks[0])
			}
		})
	}
}

func TestCacheUsage(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	system := []model.SystemBlock{{Text: strings.Repeat("You are a careful coding agent. ", 40), Cache: true}, {Text: "cwd: /src"}}
	tools := []model.ToolSpec{{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`), Cache: true}}
	cached := func(text string) model.Block {
		b := model.TextBlock(text)
		b.Extra = map[string]json.RawMessage{"cache_control": model.CacheControl}
		return b
	}
	first := &model.Request{MaxTokens: 100, System: system, Tools: tools, Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Block{cached("Fix the bug in main.go")}},
	}}
	longer := &model.Request{MaxTokens: 100, System: system, Tools: tools, Messages: []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("Fix the bug in main.go")}},
		{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("Looking at it now.")}},
		{Role: model.RoleUser, Content: []model.Block{cached("Also add a test for it.")}},
	}}
	var usage []model.Usage
	for _, req := range []*model.Request{first, first, longer} {
		chunks, err := collect(c, t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		u := checkChunks(t, chunks).Usage
		u.OutputTokens = 0
		usage = append(usage, u)
	}
	whole := usage[0].CacheCreationInputTokens
	if whole == 0 || usage[0].CacheReadInputTokens != 0 {
		t.Fatalf("first request: %+v, want only cache creation", usage[0])
	}
	grown := usage[2].CacheCreationInputTokens
	want := []model.Usage{
		{CacheCreationInputTokens: whole},
		{CacheReadInputTokens: whole},
		{CacheReadInputTokens: whole, CacheCreationInputTokens: grown},
	}
	if d := cmp.Diff(want, usage); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	if grown == 0 {
		t.Errorf("the longer request created no cache")
	}
	if got := s.Last().Usage.OutputTokens; got == 0 {
		t.Errorf("no output tokens")
	}
}

// goldenRequest uses every field of a Request.
func goldenRequest() *model.Request {
	return &model.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 32000,
		System: []model.SystemBlock{
			{Text: "You are cairn, a coding agent.", Cache: true},
			{Text: "Today is 2026-01-01. <env> & \"quotes\""},
		},
		Tools: []model.ToolSpec{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}`)},
			{Name: "Bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`), Cache: true},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{model.TextBlock("<system-reminder>cwd: /src</system-reminder>"), model.TextBlock("Run the tests.")}},
			{Role: model.RoleAssistant, Content: []model.Block{
				{Type: model.BlockThinking, Thinking: "I should run go test.", Extra: map[string]json.RawMessage{"signature": json.RawMessage(`"EqQBCkYIBxgC"`)}},
				{Type: model.BlockToolUse, ID: "toolu_01", Name: "Bash", Input: json.RawMessage(`{"command": "go test ./..."}`)},
				{Type: model.BlockToolUse, ID: "toolu_02", Name: "Read", Input: json.RawMessage(`{"file_path":"go.mod"}`), Extra: map[string]json.RawMessage{"caller": json.RawMessage(`{"type":"direct"}`)}},
			}},
			{Role: model.RoleUser, Content: []model.Block{
				model.ToolResultBlock("toolu_01", "FAIL\tcairn/x\t0.1s", true),
				{Type: model.BlockToolResult, ToolUseID: "toolu_02", Content: json.RawMessage(`[{"type":"text","text":"module x"}]`), Extra: map[string]json.RawMessage{"cache_control": model.CacheControl}},
			}},
		},
		ContextManagement: json.RawMessage(`{"edits": [{"type": "clear_tool_uses_20250919"}]}`),
		Betas:             []string{"context-management-2025-06-27", "interleaved-thinking-2025-05-14"},
	}
}

func TestRequestGolden(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	for range 3 {
		if _, err := collect(c, t.Context(), goldenRequest()); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	body := reqs[0].Body
	for i, r := range reqs[1:] {
		if !bytes.Equal(r.Body, body) {
			t.Errorf("request %d body differs from the first:\n%s\n%s", i+2, r.Body, body)
		}
	}
	local, err := anthropic.MarshalRequest(goldenRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(local, body) {
		t.Errorf("the SDK changed the body on the way:\nsent %s\nmade %s", body, local)
	}
	golden := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(bytes.Clone(body), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(bytes.TrimSuffix(want, []byte("\n"))), string(body)); d != "" {
		t.Errorf("body differs from %s (-want +got):\n%s", golden, d)
	}
}

func TestHeaders(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	if _, err := collect(c, t.Context(), goldenRequest()); err != nil {
		t.Fatal(err)
	}
	r := s.Last()
	got := []string{r.Method, r.Path, r.APIKey, r.Version, strings.Join(r.Betas, ","), r.Header.Get("content-type")}
	want := []string{"POST", "/v1/messages", "test-key", "2023-06-01", "context-management-2025-06-27,interleaved-thinking-2025-05-14", "application/json"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}

	c2, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: s.URL, Model: "m", Version: "2099-01-01", HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(c2, t.Context(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if got := s.Last().Version; got != "2099-01-01" {
		t.Errorf("anthropic-version = %q with Config.Version set", got)
	}
	if got := s.Last().Params.Model; got != "m" {
		t.Errorf("model = %q, want Config.Model", got)
	}
}

// fakeSleep records waits instead of sleeping.
type fakeSleep struct{ waits []time.Duration }

func (f *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	f.waits = append(f.waits, d)
	return ctx.Err()
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name      string
		replies   []modeltest.Reply
		wantWaits []time.Duration
		wantErr   error // nil: the last reply succeeds
		wantSent  int
	}{
		{
			name:      "overloaded then success",
			replies:   []modeltest.Reply{modeltest.Overloaded(), modeltest.Overloaded(), modeltest.Text("ok")},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
			wantSent:  3,
		},
		{
			name:      "rate limited honours retry-after",
			replies:   []modeltest.Reply{modeltest.RateLimited(3 * time.Second), modeltest.Text("ok")},
			wantWaits: []time.Duration{3 * time.Second},
			wantSent:  2,
		},
		{
			name:      "server error then success",
			replies:   []modeltest.Reply{modeltest.Error(500), modeltest.Text("ok")},
			wantWaits: []time.Duration{500 * time.Millisecond},
			wantSent:  2,
		},
		{
			name:      "dropped connection then success",
			replies:   []modeltest.Reply{{Drop: true}, modeltest.Text("ok")},
			wantWaits: []time.Duration{500 * time.Millisecond},
			wantSent:  2,
		},
		{
			name:     "bad request is not retried",
			replies:  []modeltest.Reply{{Status: 400, ErrorMessage: "messages: roles must alternate"}},
			wantErr:  &model.APIError{Status: 400, Type: "invalid_request_error", Message: "messages: roles must alternate", RequestID: "req_fake000001"},
			wantSent: 1,
		},
		{
			name:     "overloaded mid-stream is not retried",
			replies:  []modeltest.Reply{{Status: 529, ErrorAfter: 1}, modeltest.Text("ok")},
			wantErr:  &model.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_fake000001"},
			wantSent: 1,
		},
		{
			name:      "gives up after max attempts",
			replies:   []modeltest.Reply{modeltest.Overloaded(), modeltest.Overloaded(), modeltest.Overloaded()},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
			wantErr:   &model.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_fake000003"},
			wantSent:  3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := setup(t, modeltest.Config{})
			s.Enqueue(tt.replies...)
			var fs fakeSleep
			var calls []string
			m := retry.New(c, retry.Options{
				MaxAttempts: 3,
				Sleep:       fs.sleep,
				Jitter:      func() float64 { return 0 },
				OnRetry: func(attempt int, wait time.Duration, err error) {
					calls = append(calls, fmt.Sprintf("%d %v", attempt, wait))
				},
			})
			chunks, err := collect(m, t.Context(), userRequest("hi"))
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
				checkChunks(t, chunks)
			case *model.APIError:
				var got *model.APIError
				if !errors.As(err, &got) {
					t.Fatalf("err = %v, want an *model.APIError", err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("error (-want +got):\n%s", d)
				}
			}
			if d := cmp.Diff(tt.wantWaits, fs.waits); d != "" {
				t.Errorf("waits (-want +got):\n%s", d)
			}
			if len(calls) != len(tt.wantWaits) {
				t.Errorf("OnRetry calls = %v", calls)
			}
			if got := len(s.Requests()); got != tt.wantSent {
				t.Errorf("sent %d requests, want %d", got, tt.wantSent)
			}
		})
	}
}

// TestStreamBreak: a consumer may stop at any chunk; the client yields
// nothing after and closes the response.
func TestStreamBreak(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	reply := modeltest.Reply{Content: []model.Block{modeltest.Thinking("think first", "sig"), model.TextBlock("Reading the file now."),
		modeltest.ToolUse("toolu_01", "Read", `{"file_path": "/src/main.go"}`)}}
	n := itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[model.Chunk, error] {
		s.Enqueue(reply)
		return c.Stream(t.Context(), userRequest("read it"))
	}, func(t *testing.T, k int) {
		if p := s.Pending(); p != 0 {
			t.Errorf("break after %d chunks: %d replies still queued", k+1, p)
		}
	})
	if n < 8 {
		t.Errorf("the stream had %d chunks; the test breaks at too few points", n)
	}
}
