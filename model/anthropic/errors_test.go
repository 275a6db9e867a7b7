package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/retry"
)

func TestPromptTooLong(t *testing.T) {
	_, c := setup(t, modeltest.Config{ContextWindow: 20})
	_, err := collect(c, t.Context(), userRequest(strings.Repeat("word ", 100)))
	if !errors.Is(err, model.ErrPromptTooLong) {
		t.Fatalf("err = %v, want ErrPromptTooLong", err)
	}
	var ae *model.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %T, want *model.APIError", err)
	}
	want := &model.APIError{
		Status: 400, Type: "invalid_request_error", RequestID: "req_fake000001",
		Message: "prompt is too long: 136 tokens > 20 maximum", Tokens: 136, Limit: 20,
	}
	if d := cmp.Diff(want, ae); d != "" {
		t.Errorf("error (-want +got):\n%s", d)
	}
	if retry.Retryable(err) {
		t.Error("a prompt too long is retryable")
	}
}

func TestAuth(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{APIKey: "right"})
	c, err := anthropic.New(anthropic.Config{APIKey: "wrong", BaseURL: s.URL, Model: "m", HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(retry.New(c, retry.Options{Sleep: (&fakeSleep{}).sleep}), t.Context(), userRequest("hi"))
	if !errors.Is(err, model.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	var ae *model.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Type != "authentication_error" {
		t.Errorf("err = %#v, want a 401 authentication_error", ae)
	}
	if !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("%q does not say what to check", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("sent %d requests: a 401 was retried", n)
	}
}

func TestNoAPIKey(t *testing.T) {
	_, err := anthropic.New(anthropic.ConfigFromEnv(func(string) string { return "" }))
	if !errors.Is(err, anthropic.ErrNoAPIKey) || !errors.Is(err, model.ErrAuth) {
		t.Fatalf("err = %v, want ErrNoAPIKey", err)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %s", err, want)
		}
	}

	// A local server needs no key: none is sent.
	s := modeltest.Start(t, modeltest.Config{})
	env := map[string]string{"ANTHROPIC_BASE_URL": s.URL, "ANTHROPIC_MODEL": "local"}
	cfg := anthropic.ConfigFromEnv(func(k string) string { return env[k] })
	cfg.HTTPClient = s.Client()
	c, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(c, t.Context(), userRequest("hi")); err != nil {
		t.Fatal(err)
	}
	if r := s.Last(); r.APIKey != "" || r.Header.Get("authorization") != "" || r.Params.Model != "local" {
		t.Errorf("key %q, authorization %q, model %q", r.APIKey, r.Header.Get("authorization"), r.Params.Model)
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := anthropic.New(anthropic.Config{BaseURL: "localhost:8080"}); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Errorf("err = %v, want one about the base URL", err)
	}
	s, _ := setup(t, modeltest.Config{})
	c, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: s.URL, HTTPClient: s.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(c, t.Context(), userRequest("hi"))
	if err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("err = %v, want one saying to pass a model", err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("sent %d requests without a model", n)
	}
}

func TestStreamCut(t *testing.T) {
	tests := []struct {
		name       string
		reply      modeltest.Reply
		incomplete bool // ErrIncomplete rather than a read error
	}{
		{"connection drops mid-block", modeltest.Reply{Content: []model.Block{model.TextBlock("a long answer, cut short")}, CutAfter: 4}, false},
		{"connection drops before message_stop", modeltest.Reply{Content: []model.Block{model.TextBlock("answer")}, CutAfter: 6}, false},
		{"stream ends early", modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Read", `{"file_path":"a"}`)}, EndAfter: 5}, true},
		{"stream ends before message_stop", modeltest.Reply{Content: []model.Block{model.TextBlock("answer")}, EndAfter: 6}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := setup(t, modeltest.Config{})
			s.Enqueue(tt.reply)
			chunks, err := collect(c, t.Context(), userRequest("hi"))
			if err == nil {
				t.Fatalf("no error; chunks %v", kinds(chunks))
			}
			if got := errors.Is(err, anthropic.ErrIncomplete); got != tt.incomplete {
				t.Errorf("errors.Is(%v, ErrIncomplete) = %v", err, got)
			}
			if !strings.Contains(err.Error(), "req_fake000001") {
				t.Errorf("%q does not name the request", err)
			}
			for _, ch := range chunks {
				if ch.Kind == model.ChunkDone {
					t.Errorf("a cut stream yielded ChunkDone")
				}
			}
			if len(chunks) == 0 || !retry.Retryable(err) {
				t.Errorf("chunks %v, retryable %v: want chunks before a retryable error", kinds(chunks), retry.Retryable(err))
			}
		})
	}
}

func TestCancel(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	hold := make(chan struct{})
	defer close(hold)
	s.Enqueue(modeltest.Reply{Content: []model.Block{model.TextBlock("never finished")}, Hold: hold, HoldAfter: 3})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []model.ChunkKind
	var last error
	for ch, err := range c.Stream(ctx, userRequest("hi")) {
		if err != nil {
			last = err
			break
		}
		got = append(got, ch.Kind)
		if ch.Kind == model.ChunkBlockStart {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", last)
	}
	if d := cmp.Diff([]model.ChunkKind{model.ChunkMessageStart, model.ChunkBlockStart}, got); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
}

// TestCancelDuringRetry checks that cancelling stops a retry wait.
func TestCancelDuringRetry(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	s.Enqueue(modeltest.Overloaded(), modeltest.Text("too late"))
	ctx, cancel := context.WithCancel(t.Context())
	m := retry.New(c, retry.Options{
		Sleep:   func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() },
		OnRetry: func(int, time.Duration, error) {},
	})
	_, err := collect(m, ctx, userRequest("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("sent %d requests after cancel", n)
	}
}

// TestStopEarly checks that a consumer may stop reading at any chunk.
func TestStopEarly(t *testing.T) {
	s, c := setup(t, modeltest.Config{})
	for n := 1; n <= 4; n++ {
		s.Enqueue(modeltest.Text("a few words of text"))
		i := 0
		for _, err := range c.Stream(t.Context(), userRequest("hi")) {
			if err != nil {
				t.Fatal(err)
			}
			if i++; i == n {
				break
			}
		}
	}
}

func TestNetworkError(t *testing.T) {
	s := modeltest.New(modeltest.Config{})
	url := s.URL
	s.Close()
	c, err := anthropic.New(anthropic.Config{BaseURL: url, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(c, t.Context(), userRequest("hi"))
	if err == nil || !retry.Retryable(err) || !strings.Contains(err.Error(), "sending the request") {
		t.Errorf("err = %v, want a retryable error sending the request", err)
	}
}
