package openai

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
)

func errorResponse(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
}

func TestHTTPErrorBodies(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   model.APIError
		tooBig bool
	}{{
		name:   "OpenRouter: numeric code",
		status: 400,
		body: `{"error":{"code":400,"message":"This endpoint's maximum context length is 200000 tokens. ` +
			`However, you requested about 250123 tokens (250000 of text input, 123 in the output)."}}`,
		want: model.APIError{Status: 400, Tokens: 250123, Limit: 200000,
			Message: "This endpoint's maximum context length is 200000 tokens. However, you requested about 250123 tokens (250000 of text input, 123 in the output)."},
		tooBig: true,
	}, {
		name:   "llama.cpp: exceed_context_size_error with counts",
		status: 400,
		body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",` +
			`"type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
		want: model.APIError{Status: 400, Type: "exceed_context_size_error", Tokens: 5000, Limit: 4096,
			Message: "the request exceeds the available context size, try increasing it"},
		tooBig: true,
	}, {
		name:   "vLLM: fields at the top level",
		status: 400,
		body: `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. ` +
			`Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}`,
		want: model.APIError{Status: 400, Type: "BadRequestError", Tokens: 40000, Limit: 32768,
			Message: "This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages."},
		tooBig: true,
	}, {
		name:   "OpenAI: messages resulted in",
		status: 400,
		body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. ` +
			`Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		want: model.APIError{Status: 400, Type: "invalid_request_error", Tokens: 9001, Limit: 8192,
			Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. Please reduce the length of the messages."},
		tooBig: true,
	}, {
		name:   "error as a string",
		status: 404,
		body:   `{"error":"model \"llama9\" not found, try pulling it first"}`,
		want:   model.APIError{Status: 404, Message: `model "llama9" not found, try pulling it first`},
	}, {
		name:   "FastAPI detail",
		status: 422,
		body:   `{"detail":"Field required"}`,
		want:   model.APIError{Status: 422, Message: "Field required"},
	}, {
		name:   "code without type",
		status: 429,
		body:   `{"error":{"message":"You exceeded your current quota.","type":"","code":"insufficient_quota"}}`,
		want:   model.APIError{Status: 429, Type: "insufficient_quota", Message: "You exceeded your current quota."},
	}, {
		name:   "empty body",
		status: 503,
		want:   model.APIError{Status: 503, Message: "Service Unavailable"},
	}, {
		name:   "a window mentioned in another error is not prompt too long",
		status: 400,
		body:   `{"error":{"message":"max_tokens must be below the maximum context length","type":"invalid_request_error"}}`,
		want:   model.APIError{Status: 400, Type: "invalid_request_error", Message: "max_tokens must be below the maximum context length"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpError(errorResponse(tt.status, tt.body), time.Time{})
			var got *model.APIError
			if !errors.As(err, &got) {
				t.Fatalf("%v is not an *model.APIError", err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
			if errors.Is(err, model.ErrPromptTooLong) != tt.tooBig {
				t.Errorf("errors.Is(err, ErrPromptTooLong) = %v, want %v", !tt.tooBig, tt.tooBig)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"20"}}, 20 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{"date", http.Header{"Retry-After": {"Wed, 01 Jan 2025 00:00:10 GMT"}}, 10 * time.Second},
		{"date in the past", http.Header{"Retry-After": {"Tue, 31 Dec 2024 23:00:00 GMT"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"huge", http.Header{"Retry-After": {"1e300"}}, maxRetryAfter},
		{"NaN", http.Header{"Retry-After": {"NaN"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolInput(t *testing.T) {
	tests := []struct{ args, want string }{
		{"", `{}`},
		{"  ", `{}`},
		{`{"a":1}`, `{"a":1}`},
		{` {"a":1} `, `{"a":1}`},
		{`{"a":`, `{"invalid_arguments":"{\"a\":"}`},
		{`[1]`, `{"invalid_arguments":"[1]"}`},
		{`"<b>"`, `{"invalid_arguments":"\"<b>\""}`},
	}
	for _, tt := range tests {
		if got := string(toolInput(tt.args)); got != tt.want {
			t.Errorf("toolInput(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

// FuzzErrorBody checks that any error body gives an *model.APIError with
// the response's status, and never a panic.
func FuzzErrorBody(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"error":null}`, `{"error":{"code":{"a":1}}}`,
		`{"error":{"message":"maximum context length is 99999999999999999999999 tokens; you requested 1 tokens","code":"context_length_exceeded"}}`,
		`{"error":{"code":400,"type":"exceed_context_size_error","n_ctx":-1,"n_prompt_tokens":"x"}}`,
		`{"message":"context size (12,000 tokens)","type":"x"}`,
	} {
		f.Add(400, seed)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 400 || status > 599 {
			return
		}
		var e *model.APIError
		if err := httpError(errorResponse(status, body), time.Time{}); !errors.As(err, &e) || e.Status != status {
			t.Fatalf("httpError = %v, want an APIError with status %d", err, status)
		}
	})
}
