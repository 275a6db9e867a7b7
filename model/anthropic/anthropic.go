// Package anthropic is the model.Model of the Anthropic Messages API, built
// on the official Go SDK (the Beta messages endpoint, streamed).
//
// Requests are encoded by MarshalRequest, deterministically, and sent as
// raw bytes so that nothing is lost or reordered on the way: equal Requests
// produce byte-identical bodies, which keeps prompt-cache prefixes stable.
// The SDK's own retries are off; wrap a Client with package retry for
// those.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/cairn-dev/cairn/model"
)

// DefaultVersion is the anthropic-version header sent unless
// Config.Version says otherwise.
const DefaultVersion = "2023-06-01"

// Config configures a Client.
type Config struct {
	// APIKey is sent as x-api-key. AuthToken, used when APIKey is empty,
	// is sent as a bearer token.
	APIKey, AuthToken string
	// BaseURL replaces https://api.anthropic.com, e.g. for a local server.
	BaseURL string
	// Model is used when a Request names none.
	Model string
	// Version is the anthropic-version header; empty means DefaultVersion.
	Version string
	// HTTPClient sends the requests; nil means a client without timeouts
	// (a stream may run for minutes; cancel the context to stop it).
	HTTPClient *http.Client
	// Now is the clock that retry-after dates are read against; nil
	// means time.Now.
	Now func() time.Time
}

// ConfigFromEnv reads ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
// ANTHROPIC_BASE_URL and ANTHROPIC_MODEL with getenv (os.Getenv in
// programs). A --model flag should override the Model it returns.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:    getenv("ANTHROPIC_API_KEY"),
		AuthToken: getenv("ANTHROPIC_AUTH_TOKEN"),
		BaseURL:   getenv("ANTHROPIC_BASE_URL"),
		Model:     getenv("ANTHROPIC_MODEL"),
	}
}

// Client is a model.Model over the Anthropic Messages API. It is safe for
// concurrent use.
type Client struct {
	cfg Config
	api sdk.Client
}

var _ model.Model = (*Client)(nil)

// New returns a Client. Without an API key, an auth token or a base URL it
// fails with ErrNoAPIKey.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" && cfg.AuthToken == "" && cfg.BaseURL == "" {
		return nil, ErrNoAPIKey
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(0),
		option.WithHTTPClient(hc),
		option.WithHeader("anthropic-version", cfg.Version),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("anthropic: base URL %q is not an absolute URL: check ANTHROPIC_BASE_URL", cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	switch {
	case cfg.APIKey != "":
		// The SDK's WithAPIKey sends the key as a bearer token; the API
		// takes API keys in x-api-key.
		opts = append(opts, option.WithHeader("x-api-key", cfg.APIKey))
	case cfg.AuthToken != "":
		opts = append(opts, option.WithAuthToken(cfg.AuthToken))
	}
	return &Client{cfg: cfg, api: sdk.NewClient(opts...)}, nil
}

// Stream sends req and yields its response as the model.Model contract
// says. Errors the API reports are *model.APIError (an authentication
// failure wrapped with what to check); a broken connection or a stream that
// ends before message_stop is an error that a retry wrapper may retry;
// cancelling ctx yields ctx.Err().
func (c *Client) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		r := *req
		if r.Model == "" {
			r.Model = c.cfg.Model
		}
		body, err := MarshalRequest(&r)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var res *http.Response
		stream := c.post(ctx, body, r.Betas, &res)
		defer stream.Close()

		var a assembler
		emit := func(ch model.Chunk) bool { return yield(ch, nil) }
		for stream.Next() {
			if ctx.Err() != nil {
				break
			}
			if a.events == 0 && res != nil {
				a.resp.RequestID = res.Header.Get("request-id")
			}
			ev := stream.Current()
			stop, err := a.handle(&ev, emit)
			if err != nil {
				yield(model.Chunk{}, err)
				return
			}
			if stop {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{}, c.streamError(stream.Err(), res, &a))
	}
}

// post sends body to the Messages endpoint as the SDK's
// Beta.Messages.NewStreaming does — the betas in anthropic-beta, the
// response read as a stream of events — but as it is: NewStreaming sets
// "stream" in the body again (sjson), which reads the whole body and
// copies it for a field MarshalRequest has written already.
func (c *Client) post(ctx context.Context, body []byte, betas []string, res **http.Response) *ssestream.Stream[sdk.BetaRawMessageStreamEventUnion] {
	opts := []option.RequestOption{option.WithRequestBody("application/json", body)}
	if len(betas) > 0 {
		opts = append(opts, option.WithHeader("anthropic-beta", strings.Join(betas, ",")))
	}
	var raw *http.Response
	err := c.api.Execute(ctx, http.MethodPost, "v1/messages", nil, &raw, opts...)
	*res = raw
	return ssestream.NewStream[sdk.BetaRawMessageStreamEventUnion](ssestream.NewDecoder(raw), err)
}

// streamError explains why a stream ended without message_stop.
func (c *Client) streamError(err error, res *http.Response, a *assembler) error {
	var se *sdk.Error
	switch {
	case errors.As(err, &se):
		return apiError(se, c.cfg.Now())
	case err != nil && res == nil:
		return &transientError{fmt.Errorf("anthropic: sending the request: %w", err)}
	case err != nil:
		return &transientError{fmt.Errorf("anthropic: reading the response stream after %d events [request %s]: %w", a.events, a.resp.RequestID, err)}
	}
	return &transientError{fmt.Errorf("%w, after %d events [request %s]", ErrIncomplete, a.events, a.resp.RequestID)}
}
