// Package openai is a model.Model over the OpenAI chat-completions API, the
// protocol OpenAI, Ollama, vLLM, the llama.cpp server and OpenRouter share.
//
// cairn's conversation is in the Anthropic Messages shape; this package
// converts a model.Request to chat messages and the streamed
// chat.completion.chunk events back to model.Chunks. It uses the official
// openai-go SDK with its retries turned off: retrying is the job of a
// wrapper around the Model.
package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/model"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultBaseURL is the API root used when a key is given without a base URL.
const DefaultBaseURL = "https://api.openai.com/v1/"

// ErrNotConfigured: neither a key nor a server address was given. It
// matches model.ErrAuth, as the Anthropic client's missing-key error does.
var ErrNotConfigured = fmt.Errorf("%w: no OpenAI-compatible server configured: set %s to use api.openai.com, "+
	"or %s to use another server (for example http://localhost:11434/v1 for Ollama, http://localhost:8000/v1 for vLLM)",
	model.ErrAuth, EnvAPIKey, EnvBaseURL)

// Config configures a Client.
type Config struct {
	// APIKey is sent as a bearer token. Local servers usually need none.
	APIKey string
	// BaseURL is the API root, the part before /chat/completions, e.g.
	// http://localhost:11434/v1. Empty means DefaultBaseURL.
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// NewID returns the id of a tool call the server sent without one; nil
	// means random ids of the form call_<24 hex digits>. It must be safe
	// for concurrent use when the Client is used concurrently.
	NewID func() string
	// Now is the clock that turns a Retry-After date into a wait; nil means
	// time.Now.
	Now func() time.Time
}

// ConfigFromEnv reads OPENAI_API_KEY and OPENAI_BASE_URL through getenv.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:  strings.TrimSpace(getenv(EnvAPIKey)),
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
	}
}

// Client is a model.Model speaking chat completions. It is safe for
// concurrent use.
type Client struct {
	chat sdk.ChatCompletionService
	// maxCompletionTokens sends the token limit as max_completion_tokens,
	// which OpenAI's own API wants (its reasoning models reject
	// max_tokens); other servers get max_tokens, which all of them know.
	maxCompletionTokens bool
	baseURL             string
	newID               func() string
	now                 func() time.Time
}

var _ model.Model = (*Client)(nil)

// New returns a client for cfg. It fails with ErrNotConfigured when cfg has
// neither a key nor a base URL.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, ErrNotConfigured
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an http(s) URL; set it to the API root, e.g. http://localhost:11434/v1", EnvBaseURL, base)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	c := &Client{
		// The service, unlike sdk.NewClient, reads nothing from the
		// environment: the configuration is exactly cfg.
		chat:                sdk.NewChatCompletionService(opts...),
		maxCompletionTokens: u.Hostname() == "api.openai.com",
		baseURL:             base,
		newID:               cfg.NewID,
		now:                 cfg.Now,
	}
	if c.newID == nil {
		c.newID = randomCallID
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Stream implements model.Model. Errors the server reports are
// *model.APIError values (wrapped together with model.ErrPromptTooLong when
// the window is exceeded but the message gives no numbers); a stream that
// breaks off before its finish_reason is an error too.
func (c *Client) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params, err := c.params(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var resp *http.Response
		stream := c.chat.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		defer stream.Close()

		a := newAssembler(req.Model, c.newID)
		for stream.Next() {
			if ctx.Err() != nil {
				break // data already buffered must not outrun a cancel
			}
			err := a.add(stream.Current())
			for _, ch := range a.out {
				if !yield(ch, nil) {
					return
				}
			}
			a.out = a.out[:0]
			if err != nil {
				yield(model.Chunk{}, err)
				return
			}
		}
		if err := c.streamError(ctx, stream.Err(), resp); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var header http.Header
		if resp != nil {
			header = resp.Header
		}
		a.resp.RequestID = header.Get("X-Request-Id")
		if err := a.finish(); err != nil {
			if ct := header.Get("Content-Type"); !a.started && ct != "" && !strings.Contains(ct, "event-stream") {
				err = fmt.Errorf("openai: the server answered with %q instead of an event stream; it may not support streaming (\"stream\": true)", ct)
			} else {
				err = &transientError{fmt.Errorf("%w%s", err, requestSuffix(a.resp.RequestID))}
			}
			yield(model.Chunk{}, err)
			return
		}
		for _, ch := range a.out {
			if !yield(ch, nil) {
				return
			}
		}
	}
}

// streamError turns what ended the stream into the error Stream reports:
// nil when the stream ended normally, ctx's error when it was cancelled,
// an *model.APIError when the server answered with an error status or sent
// an error event, and otherwise err wrapped with what failed.
func (c *Client) streamError(ctx context.Context, err error, resp *http.Response) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if resp != nil && resp.StatusCode >= 400 {
		return httpError(resp, c.now())
	}
	if err == nil {
		return nil
	}
	if e := eventError(err); e != nil {
		return e
	}
	if resp == nil {
		// No answer: network errors stay visible to retry wrappers as such.
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("openai: nothing answers at %s; is the server running? (%w)", c.baseURL, err)
		}
		return fmt.Errorf("openai: sending the request to %s: %w", c.baseURL, err)
	}
	return &transientError{fmt.Errorf("openai: reading the response stream%s: %w", requestSuffix(resp.Header.Get("X-Request-Id")), err)}
}

// requestSuffix names the server's request id in an error message.
func requestSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " [request " + id + "]"
}

// transientError is a failure of the connection rather than one the server
// reported: sending the same request again may succeed. Retry wrappers find
// it by its Retryable method.
type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Retryable() bool { return true }

func randomCallID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
