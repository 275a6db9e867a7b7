// Package modeltest provides a fake Anthropic Messages API for tests and
// benchmarks: a real HTTP server on the loopback interface that speaks the
// API's wire format, so provider clients are tested end to end without the
// network.
//
// The server answers POST /v1/messages. A streaming request gets the API's
// server-sent events (message_start, content_block_start, ping,
// content_block_delta, content_block_stop, message_delta, message_stop); a
// non-streaming one gets the message as JSON. Replies are scripted: a queue
// of Reply values, then Config.Respond, then Config.Default. Every request
// is recorded, raw and decoded, with the usage the server charged for it.
//
// The server keeps a prompt cache like the API's: prefixes ending at
// cache_control breakpoints are hashed (tools, then system, then messages)
// and remembered for their ttl on an injected clock, and usage splits the
// prompt into cache_read_input_tokens, cache_creation_input_tokens and
// input_tokens accordingly. Tokens are estimated deterministically: each
// tool, system block, message role and message content block counts
// ceil(n/4) for the n bytes of its canonical JSON (see EstimateTokens).
//
// Context management (the context-management beta's
// clear_tool_uses_20250919 edit) is applied to the prompt before it is
// charged and cached, and the response reports the applied edits.
//
// Faults are scripted too: HTTP errors with the API's error bodies, a
// retry-after header, an SSE error event mid-stream, a dropped connection,
// a stream that ends early, a stream that waits for the client to cancel.
package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Config configures a Server. The zero value is a server that accepts any
// key, has no context limit, and answers "OK".
type Config struct {
	// APIKey, when set, must arrive in the x-api-key header; any other
	// request gets a 401 authentication_error.
	APIKey string
	// ContextWindow, when positive, is the largest prompt in tokens; a
	// longer one gets the API's 400 "prompt is too long" error.
	ContextWindow int64
	// MinCacheTokens is the shortest prefix the cache stores (the API's is
	// 1024 or more, depending on the model); 0 caches any prefix.
	MinCacheTokens int64
	// CacheTTL is the lifetime of a cache entry whose cache_control has no
	// ttl; 0 means the API's 5 minutes.
	CacheTTL time.Duration
	// Now is the clock of the cache; nil means time.Now.
	Now func() time.Time
	// Respond, when set, answers requests once the queue is empty. It is
	// called without the server's lock, before the request is charged
	// (its Usage is still zero), and may run concurrently.
	Respond func(*Request) Reply
	// Default answers requests when the queue is empty and Respond is nil;
	// a zero Reply means Text("OK").
	Default Reply
	// DeltaBytes is the size of the text and thinking deltas; 0 means 16.
	DeltaBytes int
	// InputPieces is how many input_json_delta pieces a tool_use input is
	// split into (after a first empty one, as the API sends); 0 means 3.
	InputPieces int
}

// Server is a fake Anthropic Messages API server. It is safe for
// concurrent use.
type Server struct {
	// URL is the base URL to give a client, e.g. as ANTHROPIC_BASE_URL.
	URL string

	cfg Config
	srv *httptest.Server

	mu       sync.Mutex // guards the fields below
	queue    []Reply
	requests []*Request
	cache    cache
	seq      int
}

// Request is a request the server received.
type Request struct {
	// ID is the request-id the server answered with.
	ID     string
	Method string
	// Path is the URL path, e.g. "/v1/messages"; Query its raw query.
	Path, Query string
	Header      http.Header
	// APIKey, Version and Betas are the x-api-key, anthropic-version and
	// anthropic-beta headers (the latter split on commas).
	APIKey, Version string
	Betas           []string
	// Body is the raw body.
	Body []byte
	// Params is the decoded body; nil if it did not decode.
	Params *Params
	// Usage is what the server charged for the prompt (OutputTokens is
	// that of the reply, when one was sent).
	Usage model.Usage
	// Status is the HTTP status of the answer.
	Status int
	// ContextEdits are the context-management edits the server applied to
	// the prompt before charging it (see ContextManagementBeta); nil when
	// the request had no context_management.
	ContextEdits []AppliedEdit
	// Seen is the messages as the model saw them: Params.Messages after
	// the context-management edits (the same slice when none applied).
	// Judge what the model could know on Seen, not on Body.
	Seen []model.Message
	// Tokens is the prompt's size after the edits, as charged.
	Tokens int64
}

// SeenJSON is the model's view of the request's messages (Seen) encoded
// as the API would carry it, for searching.
// (without HTML escaping, so text reads as it was written).
func (r *Request) SeenJSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r.Seen)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Params is the decoded body of a Messages request. System is decoded into
// blocks whether it was sent as a string or a list.
type Params struct {
	Model             string
	MaxTokens         int64
	Stream            bool
	System            []model.Block
	Messages          []model.Message
	Tools             []map[string]json.RawMessage
	ContextManagement json.RawMessage
	// Fields holds every top-level field of the body, raw.
	Fields map[string]json.RawMessage
}

// ToolNames returns the names of the request's tools, in order.
func (p *Params) ToolNames() []string {
	var names []string
	for _, t := range p.Tools {
		var n string
		_ = json.Unmarshal(t["name"], &n)
		names = append(names, n)
	}
	return names
}

// New starts a server; Close stops it.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg}
	s.cache.minToken = cfg.MinCacheTokens
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	return s
}

// Start starts a server that is closed when tb ends.
func Start(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s := New(cfg)
	tb.Cleanup(s.Close)
	return s
}

// Close shuts the server down, waiting for requests in flight.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Enqueue adds replies to the queue; each request takes the first.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Pending returns how many queued replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Last returns the last request received, or nil.
func (s *Server) Last() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// ClearCache empties the prompt cache.
func (s *Server) ClearCache() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.entries = nil
}

func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// serveHTTP records the request, decides the reply under the lock, and
// writes it without the lock.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &Request{
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		Header:  r.Header.Clone(),
		APIKey:  r.Header.Get("x-api-key"),
		Version: r.Header.Get("anthropic-version"),
		Body:    body,
	}
	for _, v := range r.Header.Values("anthropic-beta") {
		for b := range strings.SplitSeq(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				req.Betas = append(req.Betas, b)
			}
		}
	}
	params, decodeErr := decodeParams(body)
	req.Params = params

	s.mu.Lock()
	s.seq++
	req.ID = fmt.Sprintf("req_fake%06d", s.seq)
	msgID := fmt.Sprintf("msg_fake%06d", s.seq)
	reply, fault := s.decide(req, decodeErr)
	switch {
	case fault != nil:
		reply = *fault
		req.Status = reply.Status
	case reply.Drop:
		req.Status = 0 // no answer
	case reply.Status != 0 && (reply.ErrorAfter <= 0 || !params.Stream):
		req.Status = reply.Status
	case reply.counted:
		req.Status = http.StatusOK
	default:
		req.Status = http.StatusOK
		req.Usage.OutputTokens = outputTokens(reply)
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if reply.Drop {
		panic(http.ErrAbortHandler) // closes the connection, logs nothing
	}
	w.Header().Set("request-id", req.ID)
	if req.Status != http.StatusOK {
		writeError(w, req.ID, reply)
		return
	}
	if reply.counted {
		w.Header().Set("content-type", "application/json")
		_, _ = fmt.Fprintf(w, `{"input_tokens":%d}`, reply.countTokens)
		return
	}
	out := &response{id: msgID, model: params.Model, reply: reply, usage: req.Usage, cfg: &s.cfg, requestID: req.ID,
		contextManagement: contextManagementJSON(req.ContextEdits)}
	if !params.Stream {
		w.Header().Set("content-type", "application/json")
		_, _ = w.Write(out.messageJSON())
		return
	}
	out.stream(w, r)
}

// decide validates req and picks its reply; it returns a fault to answer
// with instead when the request is refused. s.mu is held.
func (s *Server) decide(req *Request, decodeErr error) (Reply, *Reply) {
	refuse := func(status int, format string, args ...any) (Reply, *Reply) {
		typ, _ := errorDefaults(status)
		return Reply{}, &Reply{Status: status, ErrorType: typ, ErrorMessage: fmt.Sprintf(format, args...)}
	}
	if req.Path == "/v1/messages/count_tokens" && req.Method == http.MethodPost && decodeErr == nil {
		return s.countTokens(req)
	}
	if req.Path != "/v1/messages" {
		return refuse(http.StatusNotFound, "Not found: %s %s", req.Method, req.Path)
	}
	if req.Method != http.MethodPost {
		return refuse(http.StatusMethodNotAllowed, "method %s not allowed on /v1/messages; use POST", req.Method)
	}
	if s.cfg.APIKey != "" && req.APIKey != s.cfg.APIKey {
		return refuse(http.StatusUnauthorized, "invalid x-api-key")
	}
	if decodeErr != nil {
		return refuse(http.StatusBadRequest, "%v", decodeErr)
	}
	if err := validate(req.Params); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	ttl := s.cfg.CacheTTL
	if ttl <= 0 {
		ttl = defaultTTL
	}
	pr, err := promptOf(req.Params, ttl)
	if err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	if pr.marks > maxBreakpoints {
		return refuse(http.StatusBadRequest, "A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, pr.marks)
	}
	if pr, err = editContext(req, pr, ttl); err != nil {
		return refuse(http.StatusBadRequest, "%v", err)
	}
	req.Tokens = pr.total
	if s.cfg.ContextWindow > 0 && pr.total > s.cfg.ContextWindow {
		return refuse(http.StatusBadRequest, "prompt is too long: %d tokens > %d maximum", pr.total, s.cfg.ContextWindow)
	}
	var reply Reply
	switch {
	case len(s.queue) > 0:
		reply = s.queue[0]
		s.queue = s.queue[1:]
	case s.cfg.Respond != nil:
		s.mu.Unlock()
		reply = s.cfg.Respond(req)
		s.mu.Lock()
	default:
		reply = s.cfg.Default
		if reply.Status == 0 && len(reply.Content) == 0 {
			reply = Text("OK")
		}
	}
	if reply.Drop || (reply.Status != 0 && reply.ErrorAfter <= 0) {
		// A refused request is not charged and caches nothing.
		return reply, nil
	}
	req.Usage = s.cache.charge(pr, s.now())
	return reply, nil
}

// countTokens answers POST /v1/messages/count_tokens: the prompt's size
// after its context-management edits, charged nothing and cached nothing.
func (s *Server) countTokens(req *Request) (Reply, *Reply) {
	ttl := s.cfg.CacheTTL
	if ttl <= 0 {
		ttl = defaultTTL
	}
	pr, err := promptOf(req.Params, ttl)
	if err == nil {
		pr, err = editContext(req, pr, ttl)
	}
	if err != nil {
		return Reply{}, &Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorMessage: err.Error()}
	}
	req.Tokens = pr.total
	return Reply{counted: true, countTokens: pr.total}, nil
}

// decodeParams decodes a Messages request body.
func decodeParams(body []byte) (*Params, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("request body is not a JSON object: %v", err)
	}
	p := &Params{Fields: fields, ContextManagement: fields["context_management"]}
	for _, f := range []struct {
		key string
		dst any
	}{
		{"model", &p.Model}, {"max_tokens", &p.MaxTokens}, {"stream", &p.Stream},
		{"messages", &p.Messages}, {"tools", &p.Tools},
	} {
		if raw, ok := fields[f.key]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, fmt.Errorf("%s: %v", f.key, err)
			}
		}
	}
	if raw, ok := fields["system"]; ok {
		sys, err := model.DecodeContent(raw)
		if err != nil {
			return nil, fmt.Errorf("system: %v", err)
		}
		p.System = sys
	}
	return p, nil
}

// validate checks what the API checks before it samples.
func validate(p *Params) error {
	switch {
	case p.Model == "":
		return fmt.Errorf("model: Field required")
	case p.MaxTokens <= 0:
		return fmt.Errorf("max_tokens: must be at least 1, got %d", p.MaxTokens)
	case len(p.Messages) == 0:
		return fmt.Errorf("messages: at least one message is required")
	}
	for i, m := range p.Messages {
		if m.Role != model.RoleUser && m.Role != model.RoleAssistant {
			return fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if m.Role != model.RoleAssistant {
			continue
		}
		// Every tool_use needs its tool_result in the next message.
		results := map[string]bool{}
		if i+1 < len(p.Messages) {
			for _, b := range p.Messages[i+1].Content {
				if b.Type == model.BlockToolResult {
					results[b.ToolUseID] = true
				}
			}
		}
		var missing []string
		for _, b := range m.Content {
			if b.Type == model.BlockToolUse && !results[b.ID] && i+1 < len(p.Messages) {
				missing = append(missing, b.ID)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
}

// outputTokens is the reply's output token count: as scripted, or
// estimated from its content, at least 1.
func outputTokens(r Reply) int64 {
	if r.OutputTokens > 0 {
		return r.OutputTokens
	}
	var n int64
	for _, b := range r.Content {
		raw, _ := b.MarshalJSON()
		n += EstimateTokens(len(raw))
	}
	return max(n, 1)
}

// writeError answers with the API's error body.
func writeError(w http.ResponseWriter, requestID string, r Reply) {
	w.Header().Set("content-type", "application/json")
	if r.RetryAfter > 0 {
		secs := (r.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("retry-after", fmt.Sprint(int64(secs)))
	}
	w.WriteHeader(r.Status)
	_, _ = w.Write(errorBody(requestID, r))
}

// errorBody is the API's error JSON for r.
func errorBody(requestID string, r Reply) []byte {
	typ, msg := errorDefaults(r.Status)
	if r.ErrorType != "" {
		typ = r.ErrorType
	}
	if r.ErrorMessage != "" {
		msg = r.ErrorMessage
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"error","error":{"type":`)
	b.Write(jsonw.String(typ))
	b.WriteString(`,"message":`)
	b.Write(jsonw.String(msg))
	b.WriteString(`},"request_id":`)
	b.Write(jsonw.String(requestID))
	b.WriteByte('}')
	return b.Bytes()
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
