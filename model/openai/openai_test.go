package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/itertest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/openai"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// newClient returns a client of srv whose generated tool call ids are
// call_gen_1, call_gen_2, …
func newClient(t testing.TB, srv *openaitest.Server, key string) *openai.Client {
	t.Helper()
	n := 0
	c, err := openai.New(openai.Config{
		BaseURL: srv.URL,
		APIKey:  key,
		NewID:   func() string { n++; return fmt.Sprintf("call_gen_%d", n) },
		Now:     func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect runs a request and returns every chunk and the error that ended
// the sequence.
func collect(c model.Model, ctx context.Context, req *model.Request) ([]model.Chunk, error) {
	var chunks []model.Chunk
	for ch, err := range c.Stream(ctx, req) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, ch)
	}
	return chunks, nil
}

func simpleRequest() *model.Request {
	return &model.Request{
		Model:     "gpt-4o",
		MaxTokens: 1024,
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}},
	}
}

func textBlock(s string) *model.Block { b := model.TextBlock(s); return &b }

func TestStreamText(t *testing.T) {
	reply := openaitest.Text("Hel", "lo", " world")
	reply.Usage = openaitest.Usage{PromptTokens: 12, CompletionTokens: 3}
	srv := openaitest.NewServer(t, reply)
	chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Chunk{
		{Kind: model.ChunkMessageStart, ID: "chatcmpl-1", Model: "gpt-4o"},
		{Kind: model.ChunkBlockStart, Index: 0, Block: &model.Block{Type: model.BlockText}},
		{Kind: model.ChunkTextDelta, Index: 0, Text: "Hel"},
		{Kind: model.ChunkTextDelta, Index: 0, Text: "lo"},
		{Kind: model.ChunkTextDelta, Index: 0, Text: " world"},
		{Kind: model.ChunkBlockStop, Index: 0, Block: textBlock("Hello world")},
		{Kind: model.ChunkDone, Response: &model.Response{
			ID:         "chatcmpl-1",
			Model:      "gpt-4o",
			Content:    []model.Block{model.TextBlock("Hello world")},
			StopReason: model.StopEndTurn,
			Usage:      model.Usage{InputTokens: 12, OutputTokens: 3},
			RequestID:  "req_fake_1",
		}},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

// checkSequence checks the order the Model interface promises: one
// MessageStart, blocks that start, get deltas at their own index and stop
// one after another, and a Done whose content equals the stopped blocks.
func checkSequence(t *testing.T, chunks []model.Chunk) *model.Response {
	t.Helper()
	if len(chunks) < 2 || chunks[0].Kind != model.ChunkMessageStart || chunks[len(chunks)-1].Kind != model.ChunkDone {
		t.Fatalf("sequence does not run from MessageStart to Done: %v", kinds(chunks))
	}
	var stopped []model.Block
	open := -1
	for _, ch := range chunks[1 : len(chunks)-1] {
		switch ch.Kind {
		case model.ChunkBlockStart:
			if open >= 0 || ch.Index != len(stopped) {
				t.Fatalf("block %d starts while block %d is open or at the wrong index: %v", ch.Index, open, kinds(chunks))
			}
			open = ch.Index
		case model.ChunkTextDelta, model.ChunkInputDelta:
			if ch.Index != open {
				t.Fatalf("delta for block %d while block %d is open", ch.Index, open)
			}
		case model.ChunkBlockStop:
			if ch.Index != open {
				t.Fatalf("block %d stops while block %d is open", ch.Index, open)
			}
			stopped = append(stopped, *ch.Block)
			open = -1
		default:
			t.Fatalf("unexpected chunk kind %d inside the message", ch.Kind)
		}
	}
	resp := chunks[len(chunks)-1].Response
	if diff := cmp.Diff(stopped, resp.Content); diff != "" {
		t.Errorf("Done content differs from the stopped blocks (-stopped +done):\n%s", diff)
	}
	return resp
}

func kinds(chunks []model.Chunk) []model.ChunkKind {
	var out []model.ChunkKind
	for _, c := range chunks {
		out = append(out, c.Kind)
	}
	return out
}

// inputDeltas returns the concatenated input deltas of block i and how many
// there were.
func inputDeltas(chunks []model.Chunk, i int) (string, int) {
	var b strings.Builder
	n := 0
	for _, c := range chunks {
		if c.Kind == model.ChunkInputDelta && c.Index == i {
			b.WriteString(c.Text)
			n++
		}
	}
	return b.String(), n
}

func TestStreamToolCallSplitArguments(t *testing.T) {
	args := `{"path":"/tmp/ünïcode file.txt","offset":120,"limit":20,"nested":{"a":[1,2,3]}}`
	pieces := openaitest.SplitEvery(args, 3)
	srv := openaitest.NewServer(t, openaitest.ToolCalls(openaitest.ToolCall{ID: "call_abc", Name: "Read", Arguments: pieces}))
	chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	resp := checkSequence(t, chunks)
	want := []model.Block{{Type: model.BlockToolUse, ID: "call_abc", Name: "Read", Input: json.RawMessage(args)}}
	if diff := cmp.Diff(want, resp.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if resp.StopReason != model.StopToolUse {
		t.Errorf("stop reason = %q, want %q", resp.StopReason, model.StopToolUse)
	}
	got, n := inputDeltas(chunks, 0)
	if got != args || n != len(pieces) {
		t.Errorf("input deltas = %d pieces %q, want %d pieces %q", n, got, len(pieces), args)
	}
	start := chunks[1]
	if start.Kind != model.ChunkBlockStart || start.Block.ID != "call_abc" || start.Block.Name != "Read" {
		t.Errorf("block start = %+v, want the tool_use id and name", start)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	reply := openaitest.Reply{
		Text: []string{"Reading ", "both."},
		ToolCalls: []openaitest.ToolCall{
			{ID: "call_1", Name: "Read", Arguments: []string{`{"path":`, `"a.go"}`}},
			{Name: "Grep", Arguments: []string{`{"pattern"`, `:"func"`, `}`}}, // no id: one is generated
		},
	}
	srv := openaitest.NewServer(t, reply)
	chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	resp := checkSequence(t, chunks)
	want := []model.Block{
		model.TextBlock("Reading both."),
		{Type: model.BlockToolUse, ID: "call_1", Name: "Read", Input: json.RawMessage(`{"path":"a.go"}`)},
		{Type: model.BlockToolUse, ID: "call_gen_1", Name: "Grep", Input: json.RawMessage(`{"pattern":"func"}`)},
	}
	if diff := cmp.Diff(want, resp.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	for i, wantArgs := range map[int]string{1: `{"path":"a.go"}`, 2: `{"pattern":"func"}`} {
		if got, _ := inputDeltas(chunks, i); got != wantArgs {
			t.Errorf("input deltas of block %d = %q, want %q", i, got, wantArgs)
		}
	}
	if resp.StopReason != model.StopToolUse {
		t.Errorf("stop reason = %q, want tool_use", resp.StopReason)
	}
}

// TestStreamServerQuirks covers streams of servers that bend the format.
func TestStreamServerQuirks(t *testing.T) {
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	tests := []struct {
		name   string
		events []string
		want   []model.Block
		stop   string
	}{{
		name: "every call at index 0, told apart by id, in one chunk; finish stop",
		events: []string{
			chunk(`{"role":"assistant","content":"","tool_calls":[`+
				`{"index":0,"id":"a","type":"function","function":{"name":"Read","arguments":"{\"path\":\"x\"}"}},`+
				`{"index":0,"id":"b","type":"function","function":{"name":"Read","arguments":"{\"path\":\"y\"}"}}]}`, ""),
			chunk(`{}`, "stop"),
			"[DONE]",
		},
		want: []model.Block{
			{Type: model.BlockToolUse, ID: "a", Name: "Read", Input: json.RawMessage(`{"path":"x"}`)},
			{Type: model.BlockToolUse, ID: "b", Name: "Read", Input: json.RawMessage(`{"path":"y"}`)},
		},
		stop: model.StopToolUse,
	}, {
		name: "id repeated in every chunk, empty and invalid arguments",
		events: []string{
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"Now","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"Bash","arguments":"{\"command\": \"ls"}}]}`, ""),
			chunk(`{}`, "length"),
			"[DONE]",
		},
		want: []model.Block{
			{Type: model.BlockToolUse, ID: "a", Name: "Now", Input: json.RawMessage(`{}`)},
			{Type: model.BlockToolUse, ID: "b", Name: "Bash", Input: json.RawMessage(`{"invalid_arguments":"{\"command\": \"ls"}`)},
		},
		stop: model.StopMaxTokens,
	}, {
		name: "text after a tool call starts a new block; usage in the finish chunk",
		events: []string{
			chunk(`{"content":"a"}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"t","function":{"name":"X","arguments":"{}"}}]}`, ""),
			chunk(`{"content":"b"}`, ""),
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			"[DONE]",
		},
		want: []model.Block{
			model.TextBlock("a"),
			{Type: model.BlockToolUse, ID: "t", Name: "X", Input: json.RawMessage(`{}`)},
			model.TextBlock("b"),
		},
		stop: model.StopToolUse,
	}, {
		name:   "refusal",
		events: []string{chunk(`{"refusal":"I can't."}`, ""), chunk(`{}`, "content_filter"), "[DONE]"},
		want:   []model.Block{model.TextBlock("I can't.")},
		stop:   "refusal",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Reply{Raw: tt.events})
			chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			resp := checkSequence(t, chunks)
			if diff := cmp.Diff(tt.want, resp.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if resp.StopReason != tt.stop {
				t.Errorf("stop reason = %q, want %q", resp.StopReason, tt.stop)
			}
		})
	}
}

func TestStreamUsageCachedTokens(t *testing.T) {
	reply := openaitest.Text("ok")
	reply.Usage = openaitest.Usage{PromptTokens: 1000, CompletionTokens: 50, CachedTokens: 800}
	srv := openaitest.NewServer(t, reply)
	chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	resp := checkSequence(t, chunks)
	want := model.Usage{InputTokens: 200, OutputTokens: 50, CacheReadInputTokens: 800}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// TestRequestGolden sends a conversation with every kind of block and
// compares the body the server received with testdata/request.golden.json.
func TestRequestGolden(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("done"))
	if _, err := collect(newClient(t, srv, "sk-test"), t.Context(), conversation(t)); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	var got bytes.Buffer
	if err := json.Indent(&got, reqs[0].Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	path := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if h := reqs[0].Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want the key as a bearer token", h)
	}
}

// conversation is a request using every block type the converter knows.
func conversation(t *testing.T) *model.Request {
	t.Helper()
	var msgs []model.Message
	if err := json.Unmarshal([]byte(`[
	  {"role":"user","content":"Look at main.go and the screenshot."},
	  {"role":"assistant","content":[
	    {"type":"thinking","thinking":"Two things to read.","signature":"sig"},
	    {"type":"text","text":"Reading both."},
	    {"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"main.go"}},
	    {"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"shot.png"}}
	  ]},
	  {"role":"user","content":[
	    {"type":"tool_result","tool_use_id":"toolu_1","content":"package main\n"},
	    {"type":"tool_result","tool_use_id":"toolu_2","content":[
	      {"type":"text","text":"shot.png (1 KB)"},
	      {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}
	    ]},
	    {"type":"text","text":"Also run the tests."}
	  ]},
	  {"role":"assistant","content":[
	    {"type":"tool_use","id":"toolu_3","name":"Bash","input":{"command":"go test ./..."}}
	  ]},
	  {"role":"user","content":[
	    {"type":"tool_result","tool_use_id":"toolu_3","content":"FAIL\tmain\t0.01s","is_error":true},
	    {"type":"text","text":"[id:3u4506]"}
	  ]},
	  {"role":"assistant","content":[{"type":"text","text":"A test fails."}]},
	  {"role":"user","content":[
	    {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
	    {"type":"text","text":"And this one?"},
	    {"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"}}
	  ]}
	]`), &msgs); err != nil {
		t.Fatal(err)
	}
	return &model.Request{
		Model:     "llama3.1:8b",
		MaxTokens: 4096,
		System: []model.SystemBlock{
			{Text: "You are cairn, a coding agent.", Cache: true},
			{Text: "The working directory is /src."},
		},
		Messages: msgs,
		Tools: []model.ToolSpec{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["file_path"]}`)},
			{Name: "Bash", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		},
	}
}

func TestMaxTokensField(t *testing.T) {
	// OpenAI's own API takes max_completion_tokens; other servers get
	// max_tokens. The fake stands in for api.openai.com via a transport
	// that redirects every request to it.
	srv := openaitest.NewServer(t, openaitest.Text("a"))
	redirect := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(strings.TrimSuffix(srv.URL, "/v1"), "http://")
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := openai.New(openai.Config{APIKey: "sk-test", HTTPClient: redirect})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(c, t.Context(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["max_completion_tokens"] != 1024.0 || body["max_tokens"] != nil {
		t.Errorf("api.openai.com request has max_completion_tokens=%v max_tokens=%v, want 1024 and none",
			body["max_completion_tokens"], body["max_tokens"])
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply openaitest.Reply
		is    []error
		want  model.APIError
	}{{
		name:  "context length exceeded",
		reply: openaitest.ContextLengthExceeded(128000, 131072),
		is:    []error{model.ErrPromptTooLong},
		want: model.APIError{Status: 400, Type: "invalid_request_error", Tokens: 131072, Limit: 128000, RequestID: "req_fake_1",
			Message: "This model's maximum context length is 128000 tokens. However, you requested 131072 tokens " +
				"(130072 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."},
	}, {
		name:  "rate limited with seconds",
		reply: openaitest.RateLimited("7"),
		is:    []error{model.ErrRateLimited},
		want: model.APIError{Status: 429, Type: "requests", RetryAfter: 7 * time.Second, RequestID: "req_fake_1",
			Message: "Rate limit reached for requests (fake server). Wait before trying again."},
	}, {
		name:  "rate limited with a date",
		reply: openaitest.RateLimited("Wed, 01 Jan 2025 00:01:30 GMT"),
		is:    []error{model.ErrRateLimited},
		want: model.APIError{Status: 429, Type: "requests", RetryAfter: 90 * time.Second, RequestID: "req_fake_1",
			Message: "Rate limit reached for requests (fake server). Wait before trying again."},
	}, {
		name:  "server error",
		reply: openaitest.ServerError(),
		want: model.APIError{Status: 500, Type: "server_error", RequestID: "req_fake_1",
			Message: "The fake server failed while handling the request."},
	}, {
		name:  "context length without numbers, code only",
		reply: openaitest.Error(400, "invalid_request_error", "context_length_exceeded", "messages", "Input is too long for this model."),
		is:    []error{model.ErrPromptTooLong},
		want:  model.APIError{Status: 400, Type: "invalid_request_error", RequestID: "req_fake_1", Message: "Input is too long for this model."},
	}, {
		name:  "plain text body",
		reply: openaitest.Reply{Status: 502, Body: "upstream connect error\n"},
		want:  model.APIError{Status: 502, RequestID: "req_fake_1", Message: "upstream connect error"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, tt.reply)
			chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
			if len(chunks) != 0 {
				t.Errorf("got %d chunks before the error, want none", len(chunks))
			}
			var got *model.APIError
			if !errors.As(err, &got) {
				t.Fatalf("error %v (%T) is not an *model.APIError", err, err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("server got %d requests, want 1 (the SDK must not retry)", n)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("a"))
	srv.APIKey = "sk-right"
	_, err := collect(newClient(t, srv, "sk-wrong"), t.Context(), simpleRequest())
	var apiErr *model.APIError
	if !errors.Is(err, model.ErrAuth) || !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Errorf("wrong key: err = %v, want ErrAuth from a 401 APIError", err)
	}
	if err != nil && !strings.Contains(err.Error(), "check OPENAI_API_KEY") {
		t.Errorf("wrong key: err = %q, want it to say what to check", err)
	}
	if _, err := collect(newClient(t, srv, "sk-right"), t.Context(), simpleRequest()); err != nil {
		t.Errorf("right key: %v", err)
	}
}

func TestNoKeySendsNoAuthorization(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("a"))
	if _, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none for a local server without a key", h)
	}
}

func TestStreamBreaks(t *testing.T) {
	tests := []struct {
		name      string
		reply     openaitest.Reply
		check     func(t *testing.T, err error)
		permanent bool // not worth sending again
	}{{
		name:  "connection cut",
		reply: openaitest.Text("a", "b", "c").CutAfter(2),
		check: func(t *testing.T, err error) {
			var apiErr *model.APIError
			if err == nil || errors.As(err, &apiErr) {
				t.Errorf("err = %v, want a read error", err)
			}
		},
	}, {
		name:  "body ends without finish_reason",
		reply: openaitest.Text("a", "b", "c").EndAfter(2),
		check: func(t *testing.T, err error) {
			if !errors.Is(err, openai.ErrIncomplete) {
				t.Errorf("err = %v, want ErrIncomplete", err)
			}
		},
	}, {
		name:  "error event",
		reply: openaitest.Text("a", "b", "c").ErrorAfter(2, openaitest.ServerError()),
		check: func(t *testing.T, err error) {
			var apiErr *model.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Type != "server_error" || !apiErr.Retryable() {
				t.Errorf("err = %v, want a retryable APIError with status 500 and type server_error", err)
			}
		},
	}, {
		name:  "context length error event",
		reply: openaitest.Text("a").ErrorAfter(1, openaitest.ContextLengthExceeded(8192, 9000)),
		check: func(t *testing.T, err error) {
			var apiErr *model.APIError
			if !errors.Is(err, model.ErrPromptTooLong) || !errors.As(err, &apiErr) || apiErr.Tokens != 9000 || apiErr.Limit != 8192 {
				t.Errorf("err = %v, want ErrPromptTooLong with 9000 of 8192 tokens", err)
			}
		},
		permanent: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, tt.reply)
			chunks, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
			tt.check(t, err)
			if retryable(err) == tt.permanent {
				t.Errorf("retryable(%v) = %v, want %v", err, retryable(err), !tt.permanent)
			}
			for _, c := range chunks {
				if c.Kind == model.ChunkDone {
					t.Errorf("got ChunkDone from a broken stream")
				}
			}
		})
	}
}

// retryable reports whether err says it may succeed when sent again, as
// the retry wrapper asks.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	return errors.As(err, &r) && r.Retryable()
}

func TestNotAStream(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{
		Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   `{"id":"x","object":"chat.completion","choices":[]}`,
	})
	_, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err == nil || !strings.Contains(err.Error(), `"application/json" instead of an event stream`) || retryable(err) {
		t.Errorf("err = %v, want a permanent error naming the content type", err)
	}
}

func TestCancel(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("a", "b", "c").HoldAfter(2))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var last error
	var deltas int
	for ch, err := range newClient(t, srv, "").Stream(ctx, simpleRequest()) {
		if err != nil {
			last = err
			break
		}
		if ch.Kind == model.ChunkTextDelta {
			deltas++
			cancel() // the server is now stalled after "a"
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", last)
	}
	if deltas != 1 {
		t.Errorf("got %d text deltas, want 1", deltas)
	}
}

func TestBreakStopsStream(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Text("a", "b").HoldAfter(2))
	for range newClient(t, srv, "").Stream(t.Context(), simpleRequest()) {
		break // the stalled server must see the client go away, or Close hangs
	}
}

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"nothing", nil, "set OPENAI_API_KEY to use api.openai.com, or OPENAI_BASE_URL"},
		{"key only", map[string]string{"OPENAI_API_KEY": "sk-x"}, ""},
		{"base URL only", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, ""},
		{"bad base URL", map[string]string{"OPENAI_BASE_URL": "localhost:11434"}, `OPENAI_BASE_URL "localhost:11434" is not an http(s) URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openai.New(openai.ConfigFromEnv(env(tt.env)))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("New: err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := openai.New(openai.Config{}); !errors.Is(err, openai.ErrNotConfigured) || !errors.Is(err, model.ErrAuth) {
		t.Errorf("New(Config{}) = %v, want ErrNotConfigured matching model.ErrAuth", err)
	}
}

func TestNoModel(t *testing.T) {
	srv := openaitest.NewServer(t)
	req := simpleRequest()
	req.Model = ""
	_, err := collect(newClient(t, srv, ""), t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("err = %v, want one that says to pass --model", err)
	}
}

func TestContextWindow(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		env     string
		setting int
		want    int
	}{
		{"env wins over setting and table", "gpt-4o", "50000", 70000, 50000},
		{"setting wins over table", "gpt-4o", "", 70000, 70000},
		{"bad env is ignored", "gpt-4o", "lots", 0, 128000},
		{"zero env is ignored", "gpt-4o", "0", 0, 128000},
		{"table", "gpt-4o", "", 0, 128000},
		{"table, dated snapshot", "gpt-4o-2024-08-06", "", 0, 128000},
		{"table, longer prefix wins", "gpt-4o-mini", "", 0, 128000},
		{"gpt-4.1", "gpt-4.1-mini", "", 0, 1047576},
		{"gpt-4 is not gpt-4o", "gpt-4", "", 0, 8192},
		{"o3", "o3", "", 0, 200000},
		{"o4-mini", "o4-mini", "", 0, 200000},
		{"OpenRouter prefix", "openai/o3-mini", "", 0, 200000},
		{"Ollama tag", "llama3:8b", "", 0, 8192},
		{"Ollama tag, newer llama", "llama3.1:70b-instruct-q4_K_M", "", 0, 131072},
		{"qwen2.5-coder", "qwen2.5-coder:32b", "", 0, 32768},
		{"case-insensitive", "GPT-4o", "", 0, 128000},
		{"word boundary", "o30", "", 0, openai.DefaultContextWindow},
		{"unknown", "my-finetune", "", 0, openai.DefaultContextWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == openai.EnvContextWindow {
					return tt.env
				}
				return ""
			}
			if got := openai.ContextWindow(tt.model, getenv, tt.setting); got != tt.want {
				t.Errorf("ContextWindow(%q, env %q, setting %d) = %d, want %d", tt.model, tt.env, tt.setting, got, tt.want)
			}
		})
	}
}

func TestServerDown(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.Close()
	_, err := collect(newClient(t, srv, ""), t.Context(), simpleRequest())
	if err == nil || !strings.Contains(err.Error(), "is the server running?") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("err = %v, want one asking whether the server at %s runs", err, srv.URL)
	}
}

// TestStreamBreakAtEveryChunk: a consumer may stop at any chunk, the last
// ones (sent after the body ended) included; the client yields nothing
// after.
func TestStreamBreakAtEveryChunk(t *testing.T) {
	srv := openaitest.NewServer(t)
	reply := openaitest.Reply{Text: []string{"Read", "ing."}, ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "Read", Arguments: []string{`{"file_`, `path":"/a"}`}}}}
	c := newClient(t, srv, "")
	n := itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[model.Chunk, error] {
		srv.Push(reply)
		return c.Stream(t.Context(), simpleRequest())
	}, nil)
	if n < 6 {
		t.Errorf("the stream had %d chunks; the test breaks at too few points", n)
	}
}
