package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/cairn-dev/cairn/model"
)

// ErrNoAPIKey is returned by New when there is neither a key nor a base
// URL to send requests to. It matches model.ErrAuth.
var ErrNoAPIKey = fmt.Errorf("%w: no Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a local server that needs none)", model.ErrAuth)

// ErrIncomplete is reported when a response stream ends before its
// message_stop event: the response is cut short, never silently returned.
var ErrIncomplete = errors.New("anthropic: the response stream ended before message_stop")

// transientError is a failure of the connection rather than one the API
// reported: sending the same request again may succeed. Retry wrappers
// find it by its Retryable method.
type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Retryable() bool { return true }

// maxRetryAfter bounds a server's retry-after, against nonsense values.
const maxRetryAfter = 24 * time.Hour

// apiError converts an error of the SDK into a *model.APIError; an
// authentication failure comes wrapped with what to check.
func apiError(e *sdk.Error, now time.Time) error {
	ae := &model.APIError{Status: e.StatusCode, RequestID: e.RequestID}
	raw := e.RawJSON()
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil {
		ae.Type, ae.Message = body.Error.Type, body.Error.Message
		if ae.RequestID == "" {
			ae.RequestID = body.RequestID
		}
	}
	if ae.Type == "" && ae.Message == "" {
		// Not the API's error shape, e.g. a proxy's page: keep its start.
		ae.Message = truncate(strings.TrimSpace(raw), 300)
	}
	if e.Response != nil {
		ae.RetryAfter = retryAfter(e.Response.Header, now)
		if ae.RequestID == "" {
			ae.RequestID = e.Response.Header.Get("request-id")
		}
	}
	if ae.Status < 400 {
		// An SSE error event arrives on a 200 response: take the status
		// its type stands for.
		ae.Status = statusOf(ae.Type)
	}
	ae.Tokens, ae.Limit = parsePromptTooLong(ae.Message)
	switch ae.Status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w; check that ANTHROPIC_API_KEY holds a valid key (or that ANTHROPIC_BASE_URL points at the server you mean)", ae)
	case http.StatusForbidden:
		return fmt.Errorf("%w; the key is not allowed to do this: check its workspace and the model name", ae)
	}
	return ae
}

// statusOf is the HTTP status the API uses for an error type.
func statusOf(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

// parsePromptTooLong reads the sizes out of the API's message
// "prompt is too long: 210000 tokens > 200000 maximum"; zeros if absent.
func parsePromptTooLong(msg string) (tokens, limit int) {
	const marker = "prompt is too long:"
	i := strings.Index(strings.ToLower(msg), marker)
	if i < 0 {
		return 0, 0
	}
	fields := strings.Fields(msg[i+len(marker):])
	if len(fields) < 5 || fields[1] != "tokens" || fields[2] != ">" || !strings.HasPrefix(fields[4], "maximum") {
		return 0, 0
	}
	t, err1 := strconv.Atoi(fields[0])
	l, err2 := strconv.Atoi(fields[3])
	if err1 != nil || err2 != nil || t < 0 || l < 0 {
		return 0, 0
	}
	return t, l
}

// retryAfter reads the wait a response asks for: retry-after-ms, or
// retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampWait(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampWait(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampWait(float64(t.Sub(now)))
	}
	return 0
}

func clampWait(ns float64) time.Duration {
	if math.IsNaN(ns) || ns <= 0 {
		return 0
	}
	if ns >= float64(maxRetryAfter) {
		return maxRetryAfter
	}
	return time.Duration(ns)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
