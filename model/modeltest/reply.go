package modeltest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Reply is one scripted answer of the server: a message, or a fault.
//
// A message reply streams Content block by block: text and thinking as
// deltas of a few bytes, a tool_use's input as several input_json_delta
// pieces, any other block type whole in its content_block_start.
type Reply struct {
	// Content is the assistant message's content.
	Content []model.Block
	// StopReason defaults to "tool_use" when Content has a tool_use block,
	// otherwise "end_turn".
	StopReason string
	// OutputTokens overrides the estimated output token count.
	OutputTokens int64

	// Status, when non-zero, makes the reply an API error with this HTTP
	// status and the API's error body.
	Status int
	// ErrorType is the error body's error.type; it defaults from Status
	// ("overloaded_error" for 529, "rate_limit_error" for 429 …).
	ErrorType string
	// ErrorMessage is the error body's error.message; it defaults from
	// Status.
	ErrorMessage string
	// RetryAfter is sent as the retry-after header (whole seconds, rounded
	// up) of an error reply.
	RetryAfter time.Duration
	// ErrorAfter, when positive on an error reply to a streaming request,
	// sends the error as an SSE "error" event after that many events of a
	// normal response, as the API does when it overloads mid-stream.
	ErrorAfter int

	// Drop closes the connection without an answer.
	Drop bool
	// CutAfter, when positive, drops the connection after that many SSE
	// events: the client sees a truncated body.
	CutAfter int
	// EndAfter, when positive, ends the response cleanly after that many
	// SSE events, without message_stop.
	EndAfter int
	// Hold, when not nil, makes the server wait after HoldAfter events
	// until Hold is closed or the client goes away, to test cancellation.
	Hold      <-chan struct{}
	HoldAfter int

	// counted marks the answer to a count_tokens request.
	counted     bool
	countTokens int64
}

// Text returns a reply with one text block.
func Text(s string) Reply {
	return Reply{Content: []model.Block{model.TextBlock(s)}}
}

// ToolUse returns a tool_use block; input is its JSON input.
func ToolUse(id, name, input string) model.Block {
	return model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// Thinking returns a thinking block with its signature.
func Thinking(text, signature string) model.Block {
	return model.Block{
		Type:     model.BlockThinking,
		Thinking: text,
		Extra:    map[string]json.RawMessage{"signature": jsonw.String(signature)},
	}
}

// Error returns a reply that fails with the given HTTP status and the
// API's error type and message for it.
func Error(status int) Reply { return Reply{Status: status} }

// Overloaded returns a 529 overloaded_error reply.
func Overloaded() Reply { return Error(529) }

// RateLimited returns a 429 rate_limit_error reply asking to wait after.
func RateLimited(after time.Duration) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: after}
}

// errorDefaults returns the API's error type and a message for status.
func errorDefaults(status int) (typ, msg string) {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error", "invalid request"
	case http.StatusUnauthorized:
		return "authentication_error", "invalid x-api-key"
	case http.StatusForbidden:
		return "permission_error", "your API key does not have permission to use the specified resource"
	case http.StatusNotFound:
		return "not_found_error", "not found"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large", "request exceeds the maximum allowed number of bytes"
	case http.StatusTooManyRequests:
		return "rate_limit_error", "rate limit exceeded: too many requests, retry later"
	case 529:
		return "overloaded_error", "Overloaded"
	}
	return "api_error", "Internal server error"
}
