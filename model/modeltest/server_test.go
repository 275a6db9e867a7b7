package modeltest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

type sseEvent struct{ Event, Data string }

// post sends body to the server and returns the response and its events
// (for a stream) or body.
func post(t *testing.T, s *modeltest.Server, body string, header map[string]string) (*http.Response, []sseEvent, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !strings.HasPrefix(res.Header.Get("content-type"), "text/event-stream") {
		b, err := io.ReadAll(res.Body)
		return res, nil, string(b), err
	}
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			events = append(events, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	return res, events, "", sc.Err()
}

func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Event)
	}
	return out
}

const simple = `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestStreamEvents(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{DeltaBytes: 4})
	s.Enqueue(modeltest.Reply{Content: []model.Block{
		modeltest.Thinking("hmm", "sig"),
		model.TextBlock("héllo"),
		modeltest.ToolUse("toolu_1", "Read", `{"path": "a.go"}`),
	}})
	res, events, _, err := post(t, s, simple, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Header.Get("request-id"); got != "req_fake000001" {
		t.Errorf("request-id = %q", got)
	}
	want := []string{
		"message_start",
		"content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if d := cmp.Diff(want, names(events)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	wantData := map[int]string{
		2:  `{"type": "ping"}`,
		3:  `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		4:  `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		7:  `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hél"}}`,
		10: `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}}`,
		11: `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
		12: `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pat"}}`,
		16: `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40}}`,
		17: `{"type":"message_stop"}`,
	}
	for i, w := range wantData {
		if events[i].Data != w {
			t.Errorf("event %d data:\n got %s\nwant %s", i, events[i].Data, w)
		}
	}
	var start struct {
		Message struct {
			ID    string      `json:"id"`
			Model string      `json:"model"`
			Usage model.Usage `json:"usage"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(events[0].Data), &start); err != nil {
		t.Fatal(err)
	}
	if start.Message.ID != "msg_fake000001" || start.Message.Model != "m" {
		t.Errorf("message_start = %+v", start.Message)
	}
}

func TestNonStreaming(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{})
	s.Enqueue(modeltest.Text("<b>done</b>"))
	_, _, body, err := post(t, s, strings.Replace(simple, `"stream":true`, `"stream":false`, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_fake000001","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"<b>done</b>"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":9}}`
	if body != want {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
}

func TestErrors(t *testing.T) {
	long := `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}`
	tests := []struct {
		name       string
		cfg        modeltest.Config
		reply      *modeltest.Reply
		body       string
		header     map[string]string
		wantStatus int
		wantBody   string
		wantRetry  string
	}{
		{
			name: "overloaded", reply: ptr(modeltest.Overloaded()), body: simple, wantStatus: 529,
			wantBody: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake000001"}`,
		},
		{
			name: "rate limited", reply: ptr(modeltest.RateLimited(2500 * time.Millisecond)), body: simple, wantStatus: 429, wantRetry: "3",
			wantBody: `{"type":"error","error":{"type":"rate_limit_error","message":"rate limit exceeded: too many requests, retry later"},"request_id":"req_fake000001"}`,
		},
		{
			name: "server error", reply: ptr(modeltest.Error(500)), body: simple, wantStatus: 500,
			wantBody: `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_fake000001"}`,
		},
		{
			name: "wrong key", cfg: modeltest.Config{APIKey: "k"}, body: simple, header: map[string]string{"x-api-key": "nope"}, wantStatus: 401,
			wantBody: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_fake000001"}`,
		},
		{
			name: "prompt too long", cfg: modeltest.Config{ContextWindow: 50}, body: long, wantStatus: 400,
			wantBody: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 111 tokens > 50 maximum"},"request_id":"req_fake000001"}`,
		},
		{
			name: "no max_tokens", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400,
			wantBody: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be at least 1, got 0"},"request_id":"req_fake000001"}`,
		},
		{
			name: "tool_use without result", wantStatus: 400,
			body:     `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":"go on"}]}`,
			wantBody: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1: ` + "`tool_use` ids were found without `tool_result` blocks immediately after: t1. Each `tool_use` block must have a corresponding `tool_result` block in the next message." + `"},"request_id":"req_fake000001"}`,
		},
		{
			name: "five breakpoints", wantStatus: 400,
			body:     `{"model":"m","max_tokens":9,"system":[` + strings.Repeat(`{"type":"text","text":"s","cache_control":{"type":"ephemeral"}},`, 4) + `{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`,
			wantBody: `{"type":"error","error":{"type":"invalid_request_error","message":"A maximum of 4 blocks with cache_control may be provided. Found 5."},"request_id":"req_fake000001"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := modeltest.Start(t, tt.cfg)
			if tt.reply != nil {
				s.Enqueue(*tt.reply)
			}
			res, _, body, err := post(t, s, tt.body, tt.header)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if body != tt.wantBody {
				t.Errorf("body:\n got %s\nwant %s", body, tt.wantBody)
			}
			if got := res.Header.Get("retry-after"); got != tt.wantRetry {
				t.Errorf("retry-after = %q, want %q", got, tt.wantRetry)
			}
			if got := s.Last().Status; got != tt.wantStatus {
				t.Errorf("recorded status = %d, want %d", got, tt.wantStatus)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestFaults(t *testing.T) {
	t.Run("cut", func(t *testing.T) {
		s := modeltest.Start(t, modeltest.Config{})
		s.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("hello there")}, CutAfter: 3})
		_, events, _, err := post(t, s, simple, nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want unexpected EOF", err)
		}
		if len(events) != 3 {
			t.Errorf("got %d events, want 3", len(events))
		}
	})
	t.Run("end early", func(t *testing.T) {
		s := modeltest.Start(t, modeltest.Config{})
		s.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("hello there")}, EndAfter: 2})
		_, events, _, err := post(t, s, simple, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"message_start", "content_block_start"}, names(events)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
	t.Run("error event", func(t *testing.T) {
		s := modeltest.Start(t, modeltest.Config{})
		s.Enqueue(modeltest.Reply{Status: 529, ErrorAfter: 1})
		res, events, _, err := post(t, s, simple, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 {
			t.Errorf("status = %d, want 200", res.StatusCode)
		}
		want := []sseEvent{
			{"message_start", events[0].Data},
			{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake000001"}`},
		}
		if d := cmp.Diff(want, events); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}

func TestRecordsRequests(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{APIKey: "key"})
	body := `{"model":"m","max_tokens":7,"stream":true,"system":"be brief","tools":[{"name":"Read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}],"context_management":{"edits":[]}}`
	if _, _, _, err := post(t, s, body, map[string]string{"x-api-key": "key", "anthropic-version": "2023-06-01", "anthropic-beta": "a-1, b-2"}); err != nil {
		t.Fatal(err)
	}
	r := s.Last()
	if string(r.Body) != body {
		t.Errorf("Body = %s", r.Body)
	}
	got := struct {
		Key, Version string
		Betas, Tools []string
		System       []model.Block
		Max          int64
		CM           string
	}{r.APIKey, r.Version, r.Betas, r.Params.ToolNames(), r.Params.System, r.Params.MaxTokens, string(r.Params.ContextManagement)}
	want := struct {
		Key, Version string
		Betas, Tools []string
		System       []model.Block
		Max          int64
		CM           string
	}{"key", "2023-06-01", []string{"a-1", "b-2"}, []string{"Read"}, []model.Block{model.TextBlock("be brief")}, 7, `{"edits":[]}`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
}

// TestTokenEstimate pins the estimate on a request small enough to count
// by hand.
func TestTokenEstimate(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{})
	// system block {"type":"text","text":"abcd"}: 29 bytes, 8 tokens;
	// {"role":"user"}: 15 bytes, 4; {"type":"text","text":"hi"}: 27, 7.
	body := `{"model":"m","max_tokens":5,"stream":true,"system":[{"type":"text","text":"abcd","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	for range 2 {
		if _, _, _, err := post(t, s, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	want := []model.Usage{
		{InputTokens: 11, CacheCreationInputTokens: 8, OutputTokens: 7},
		{InputTokens: 11, CacheReadInputTokens: 8, OutputTokens: 7},
	}
	got := []model.Usage{reqs[0].Usage, reqs[1].Usage}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
}

// request builds a body with a cached system prompt and the given user
// turns, with one message breakpoint on the last block.
func request(turns ...string) string {
	var msgs []string
	for i, turn := range turns {
		if i > 0 {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"ok"}]}`)
		}
		cc := ""
		if i == len(turns)-1 {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":"`+turn+`"`+cc+`}]}`)
	}
	return `{"model":"m","max_tokens":5,"stream":true,"tools":[{"name":"Read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"system":[{"type":"text","text":"` + strings.Repeat("s", 400) + `","cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestPromptCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := modeltest.Start(t, modeltest.Config{Now: func() time.Time { return now }})
	type step struct {
		advance time.Duration
		body    string
		model   string
	}
	steps := []step{
		{body: request("one")},                                                       // writes everything up to the last breakpoint
		{body: request("one")},                                                       // reads it all
		{body: request("one", "two")},                                                // reads the old turn, writes the new one
		{body: request("one"), advance: 4 * time.Minute},                             // still cached, and refreshed
		{body: request("one"), advance: 4 * time.Minute},                             // refreshed 4 minutes ago: still there
		{body: request("one"), advance: 6 * time.Minute},                             // expired: written again
		{body: strings.Replace(request("one"), `"model":"m"`, `"model":"other"`, 1)}, // caches are per model
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		if _, _, _, err := post(t, s, st.body, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []model.Usage
	for _, r := range s.Requests() {
		u := r.Usage
		u.OutputTokens = 0
		got = append(got, u)
	}
	// request("one") is 130 tokens, all up to its last breakpoint: the tool
	// 12, the system block 107, the user role 4, "one" 7.
	// request("one", "two") adds the assistant role 5, "ok" 7, the user
	// role 4 and "two" 7.
	want := []model.Usage{
		{CacheCreationInputTokens: 130},
		{CacheReadInputTokens: 130},
		{CacheReadInputTokens: 130, CacheCreationInputTokens: 23},
		{CacheReadInputTokens: 130},
		{CacheReadInputTokens: 130},
		{CacheCreationInputTokens: 130},
		{CacheCreationInputTokens: 130},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
}

func TestHold(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{})
	hold := make(chan struct{})
	s.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("x")}, Hold: hold, HoldAfter: 1})
	close(hold) // released at once: the stream completes
	_, events, _, err := post(t, s, simple, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(events); got[len(got)-1] != "message_stop" {
		t.Errorf("events = %v", got)
	}
}

func TestDefaultAndRespond(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		return modeltest.Text("echo " + r.Params.Messages[0].Text())
	}})
	_, _, body, err := post(t, s, strings.Replace(simple, `"stream":true`, `"stream":false`, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains([]byte(body), []byte(`"text":"echo hi"`)) {
		t.Errorf("body = %s", body)
	}
}

func TestPromptCacheRules(t *testing.T) {
	sys := func(cc string) string {
		return `{"model":"m","max_tokens":5,"stream":true,"system":[{"type":"text","text":"` + strings.Repeat("s", 400) + `","cache_control":` + cc + `}],"messages":[{"role":"user","content":"hi"}]}`
	}
	// follow builds the user message "first", then k messages alternating
	// assistant and user, with the one breakpoint on the last block; k = 0
	// marks "first" itself. Each message is two segments (role, block), so
	// the breakpoint of follow(0) is 2k segments before that of follow(k).
	follow := func(k int) string {
		cc := `,"cache_control":{"type":"ephemeral"}`
		msgs := []string{`{"role":"user","content":[{"type":"text","text":"first"` + map[bool]string{true: cc}[k == 0] + `}]}`}
		for i := 1; i <= k; i++ {
			role := map[bool]string{true: "assistant", false: "user"}[i%2 == 1]
			mark := map[bool]string{true: cc}[i == k]
			msgs = append(msgs, `{"role":"`+role+`","content":[{"type":"text","text":"t"`+mark+`}]}`)
		}
		return `{"model":"m","max_tokens":5,"stream":true,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	type step struct {
		advance time.Duration
		body    string
		want    func(u model.Usage) bool
		desc    string
	}
	read := func(u model.Usage) bool { return u.CacheReadInputTokens > 0 && u.CacheCreationInputTokens == 0 }
	write := func(u model.Usage) bool { return u.CacheReadInputTokens == 0 && u.CacheCreationInputTokens > 0 }
	none := func(u model.Usage) bool { return u.CacheReadInputTokens == 0 && u.CacheCreationInputTokens == 0 }
	tests := []struct {
		name  string
		cfg   modeltest.Config
		steps []step
	}{
		{
			name: "one hour ttl",
			steps: []step{
				{body: sys(`{"type":"ephemeral","ttl":"1h"}`), want: write, desc: "write"},
				{body: sys(`{"type":"ephemeral","ttl":"1h"}`), advance: 50 * time.Minute, want: read, desc: "read after 50m"},
				{body: sys(`{"type":"ephemeral"}`), advance: 61 * time.Minute, want: write, desc: "expired after 61m"},
			},
		},
		{
			name: "configured ttl",
			cfg:  modeltest.Config{CacheTTL: time.Minute},
			steps: []step{
				{body: sys(`{"type":"ephemeral"}`), want: write, desc: "write"},
				{body: sys(`{"type":"ephemeral"}`), advance: 2 * time.Minute, want: write, desc: "expired after 2m"},
			},
		},
		{
			name: "minimum size",
			cfg:  modeltest.Config{MinCacheTokens: 1000},
			steps: []step{
				{body: sys(`{"type":"ephemeral"}`), want: none, desc: "too short to write"},
				{body: sys(`{"type":"ephemeral"}`), want: none, desc: "nor to read"},
			},
		},
		{
			name: "within the lookback",
			steps: []step{
				{body: follow(0), want: write, desc: "write"},
				{body: follow(8), want: func(u model.Usage) bool {
					return u.CacheReadInputTokens == 4+8 && // role, "first"
						u.CacheCreationInputTokens > 0
				}, desc: "16 segments back: read"},
			},
		},
		{
			name: "beyond the lookback",
			steps: []step{
				{body: follow(0), want: write, desc: "write"},
				{body: follow(10), want: write, desc: "20 segments back: missed"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			cfg := tt.cfg
			cfg.Now = func() time.Time { return now }
			s := modeltest.Start(t, cfg)
			for i, st := range tt.steps {
				now = now.Add(st.advance)
				res, _, _, err := post(t, s, st.body, nil)
				if err != nil || res.StatusCode != 200 {
					t.Fatalf("step %d: %v %v", i, err, res.Status)
				}
				if u := s.Last().Usage; !st.want(u) {
					t.Errorf("step %d (%s): usage %+v", i, st.desc, u)
				}
			}
		})
	}
}
