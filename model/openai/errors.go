package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/model"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxRetryAfter bounds the wait a server may ask for.
const maxRetryAfter = 24 * time.Hour

// httpError returns the error for an HTTP error response: an
// *model.APIError with the status, the error's type (or its code when the
// body gives no type), its message, the request id and the Retry-After wait.
func httpError(resp *http.Response, now time.Time) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &model.APIError{
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: retryAfter(resp.Header, now),
	}
	f := parseErrorBody(body)
	e.Type, e.Message = f.typ(), f.Message
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if errors.Is(e, model.ErrAuth) {
		return fmt.Errorf("%w; check %s (a local server usually needs none), and %s if the server is not the one you meant",
			e, EnvAPIKey, EnvBaseURL)
	}
	return promptTooLong(e, f)
}

// eventError returns the error for an error event inside a stream, or nil
// when err is not one. Such an event has no HTTP status; the status is
// taken from the error's numeric code or inferred from its type, and is 0
// when neither tells.
func eventError(err error) error {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return nil
	}
	f := parseErrorBody(se.Event.Data)
	e := &model.APIError{Status: f.status(), Type: f.typ(), Message: f.Message}
	if e.Message == "" {
		e.Message = se.Message
	}
	return promptTooLong(e, f)
}

// errorFields are the fields of an error body cairn reads. Servers differ:
// OpenAI and OpenRouter send {"error":{"message","type","param","code"}}
// (OpenRouter's code is a number), llama.cpp adds n_prompt_tokens and n_ctx
// to a context-size error, older vLLM sends the fields at the top level,
// and some proxies send {"error":"text"}, {"detail":"text"} or plain text.
type errorFields struct {
	Message       string          `json:"message"`
	Type          string          `json:"type"`
	Code          json.RawMessage `json:"code"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	NCtx          int             `json:"n_ctx"`
}

func parseErrorBody(body []byte) errorFields {
	var top struct {
		errorFields
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	trimmed := bytes.TrimSpace(body)
	if json.Unmarshal(trimmed, &top) != nil {
		return errorFields{Message: clip(string(trimmed))}
	}
	var f errorFields
	var s string
	switch {
	case json.Unmarshal(top.Error, &f) == nil && (f.Message != "" || f.Type != "" || len(f.Code) > 0):
	case json.Unmarshal(top.Error, &s) == nil:
		f = errorFields{Message: s}
	case top.Message != "" || top.Type != "":
		f = top.errorFields
	case json.Unmarshal(top.Detail, &s) == nil:
		f = errorFields{Message: s}
	default:
		f = errorFields{Message: clip(string(trimmed))}
	}
	return f
}

// code returns the error code as text, whether the body gave a string or
// a number.
func (f errorFields) code() string {
	var s string
	if json.Unmarshal(f.Code, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(f.Code, &n) == nil {
		return n.String()
	}
	return ""
}

// typ is the error's type, or its code when it has no type.
func (f errorFields) typ() string {
	if f.Type != "" {
		return f.Type
	}
	if c := f.code(); c != "" {
		if _, err := strconv.Atoi(c); err != nil {
			return c
		}
	}
	return ""
}

// status is the HTTP status an error event stands for.
func (f errorFields) status() int {
	if n, err := strconv.Atoi(f.code()); err == nil && n >= 400 && n <= 599 {
		return n
	}
	switch f.typ() {
	case "invalid_request_error", "context_length_exceeded", "exceed_context_size_error":
		return http.StatusBadRequest
	case "rate_limit_exceeded", "rate_limit_error":
		return http.StatusTooManyRequests
	case "server_error", "api_error", "internal_error":
		return http.StatusInternalServerError
	}
	return 0
}

func clip(s string) string {
	const n = 500
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// Patterns of context-length messages: OpenAI's and vLLM's ("This model's
// maximum context length is N tokens. However, you requested M tokens …",
// "… your messages resulted in M tokens …", "… your request has M input
// tokens …"), OpenRouter's ("… requested about M tokens …") and llama.cpp's
// ("request (M tokens) exceeds the available context size (N tokens) …").
//
// They are compiled when first needed, not as the program starts: most
// runs never see such an error.
var (
	limitPattern  = lazyPattern(`(?i)(?:maximum context length is|context size \(|context window of|context length of)\s*(\d[\d,]*)\s*tokens`)
	tokensPattern = lazyPattern(`(?i)(?:requested(?: about)?|resulted in|request has|request \()\s*(\d[\d,]*)\s*(?:input\s+)?tokens`)
	windowPattern = lazyPattern(`(?i)(maximum context length|context size|context window|context length)`)
)

// lazyPattern returns the regular expression expr, compiled on the first
// call.
func lazyPattern(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// promptTooLong recognises a context-length error, fills in e's Tokens and
// Limit when the body states them, and returns the error to report: e
// itself, or e wrapped with model.ErrPromptTooLong when errors.Is would not
// otherwise see it (no token count given).
func promptTooLong(e *model.APIError, f errorFields) error {
	code := f.code()
	isCode := code == "context_length_exceeded" || f.Type == "exceed_context_size_error" || f.Type == "context_length_exceeded"
	isMessage := (e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge || e.Status == 0) &&
		windowPattern().MatchString(e.Message)
	if !isCode && !isMessage {
		return e
	}
	e.Tokens, e.Limit = f.NPromptTokens, f.NCtx
	if m := tokensPattern().FindStringSubmatch(e.Message); m != nil && e.Tokens == 0 {
		e.Tokens = atoi(m[1])
	}
	if m := limitPattern().FindStringSubmatch(e.Message); m != nil && e.Limit == 0 {
		e.Limit = atoi(m[1])
	}
	if !isCode && e.Tokens == 0 {
		return e // mentions the window but does not say it was exceeded
	}
	if errors.Is(e, model.ErrPromptTooLong) {
		return e
	}
	return fmt.Errorf("%w: %w", model.ErrPromptTooLong, e)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// retryAfter reads the wait a response asks for: Retry-After-Ms
// (OpenAI's, in milliseconds), else Retry-After in seconds or as an HTTP
// date. It is 0 when there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return seconds(ms / 1000)
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return seconds(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

func seconds(s float64) time.Duration {
	if !(s > 0) { // also NaN
		return 0
	}
	if s >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(s * float64(time.Second))
}
