package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Model is a language model that streams its responses. Implementations are
// safe for concurrent use. Cancelling ctx stops the request and the stream;
// the iterator then yields ctx's error.
type Model interface {
	// Stream sends req and yields the response as it arrives: a
	// ChunkMessageStart, then for each content block a ChunkBlockStart,
	// deltas and a ChunkBlockStop carrying the complete block, and last a
	// ChunkDone carrying the whole Response. A failure ends the sequence
	// with a non-nil error (an *APIError for errors the API reported).
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Request is one call to a model.
type Request struct {
	Model     string
	MaxTokens int
	System    []SystemBlock
	Messages  []Message
	Tools     []ToolSpec
	// ContextManagement is passed to the Anthropic API as is (server-side
	// clearing of old tool results); other providers ignore it.
	ContextManagement json.RawMessage
	// Betas are Anthropic beta feature names to enable.
	Betas []string
}

// SystemBlock is one text block of the system prompt.
type SystemBlock struct {
	Text string
	// Cache marks a prompt-cache breakpoint after this block.
	Cache bool
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// Cache marks a prompt-cache breakpoint after this tool.
	Cache bool
}

// CacheControl is the cache_control value of a prompt-cache breakpoint.
var CacheControl = json.RawMessage(`{"type":"ephemeral"}`)

// ChunkKind tells what a Chunk carries.
type ChunkKind int

// Kinds of chunks, in the order a response yields them.
const (
	ChunkMessageStart  ChunkKind = iota // ID, Model
	ChunkBlockStart                     // Index, Block (type, and id/name of a tool_use)
	ChunkTextDelta                      // Index, Text
	ChunkThinkingDelta                  // Index, Text
	ChunkInputDelta                     // Index, Text: a piece of a tool_use's JSON input
	ChunkBlockStop                      // Index, Block: the complete block
	ChunkDone                           // Response
)

// Chunk is one piece of a streamed response.
type Chunk struct {
	Kind     ChunkKind
	Index    int
	Text     string
	Block    *Block
	ID       string // message id, on ChunkMessageStart
	Model    string // on ChunkMessageStart
	Response *Response
}

// Response is a complete model response.
type Response struct {
	ID         string
	Model      string
	Content    []Block
	StopReason string
	Usage      Usage
	// RequestID is the provider's id for the HTTP request, for support.
	RequestID string
}

// Stop reasons.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)

// Errors a Model reports, matched with errors.Is against an *APIError.
var (
	// ErrPromptTooLong: the request does not fit the context window.
	// Compaction acts on it.
	ErrPromptTooLong = errors.New("prompt is too long")
	// ErrOverloaded: the provider is overloaded (HTTP 529) — retry later.
	ErrOverloaded = errors.New("overloaded")
	// ErrRateLimited: too many requests (HTTP 429) — retry later.
	ErrRateLimited = errors.New("rate limited")
	// ErrAuth: the key is missing, wrong, or not allowed.
	ErrAuth = errors.New("authentication failed")
)

// APIError is an error the model's API reported.
type APIError struct {
	Status    int    // HTTP status
	Type      string // the API's error type, e.g. "invalid_request_error"
	Message   string
	RequestID string
	// RetryAfter is the wait the server asked for, if any.
	RetryAfter time.Duration
	// Tokens and Limit are the prompt size and window of a prompt-too-long
	// error, when the message states them.
	Tokens, Limit int
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("API error %d", e.Status)
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Is matches the sentinel errors of this package.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrPromptTooLong:
		return e.Tokens > 0 || (e.Status == 400 && containsFold(e.Message, "prompt is too long"))
	case ErrOverloaded:
		return e.Status == 529 || e.Type == "overloaded_error"
	case ErrRateLimited:
		return e.Status == 429
	case ErrAuth:
		return e.Status == 401 || e.Status == 403
	}
	return false
}

// Retryable reports whether the same request may succeed later.
func (e *APIError) Retryable() bool {
	return e.Status == 408 || e.Status == 409 || e.Status == 429 || e.Status >= 500
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
