// Package openaitest runs a fake OpenAI chat-completions server for tests.
//
// The server speaks the wire format of POST /v1/chat/completions with
// "stream": true: server-sent events of chat.completion.chunk objects, tool
// call arguments split across chunks, a final usage chunk when the request
// asks for one, and "data: [DONE]". Replies are scripted in order; every
// request is recorded. Failures are scripted too: HTTP errors with the
// OpenAI error body, a connection cut mid-stream, and a stream that stalls
// until the client goes away.
//
// A server made with New (Config) also behaves like a model behind the
// API: it estimates each prompt's tokens (EstimateTokens), refuses a
// prompt that with its max_tokens does not fit Config.ContextWindow with
// OpenAI's context_length_exceeded error, reports the prefix it saw
// before as cached tokens the way OpenAI's automatic prompt caching does,
// and answers from Config.Respond once the script is spent.
package openaitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// Path is the endpoint the server answers, relative to its host.
const Path = "/v1/chat/completions"

// Created is the "created" timestamp of every chunk, fixed so that streams
// are byte-for-byte reproducible.
const Created = 1735689600

// Server is a fake chat-completions server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the API root to give a client as its base URL; it ends in /v1.
	URL string

	// APIKey, when set, is the bearer token every request must carry;
	// requests without it get a 401 invalid_api_key error.
	APIKey string

	t   testing.TB // nil for a server made with New
	cfg Config
	// configured is set by New: usage is then charged as estimated.
	configured bool
	srv        *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	served   int
	prefixes map[[32]byte]bool // prompt prefixes seen, for caching
}

// Config configures a server made with New.
type Config struct {
	// APIKey, when set, is the bearer token every request must carry.
	APIKey string
	// ContextWindow, when positive, is the model's window in tokens: a
	// request whose prompt (EstimateTokens) and max_tokens (or
	// max_completion_tokens) together exceed it gets OpenAI's 400
	// context_length_exceeded error.
	ContextWindow int
	// Respond answers the requests the script (Push) has no reply for;
	// nil answers them with a 500. It may be called concurrently.
	Respond func(*Request) Reply
}

// Request is one request the server received.
type Request struct {
	// ID is the X-Request-Id the server answered with.
	ID     string
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Tokens is the prompt's estimated size (EstimateTokens) and
	// Completion the reply tokens it asked room for (max_tokens or
	// max_completion_tokens); 0 when the body did not decode.
	Tokens, Completion int
	// Cached is the part of Tokens the server reported as cached: the
	// longest prefix of whole messages an earlier request sent, when it
	// is 1024 tokens or more, rounded down to a multiple of 128.
	Cached int
	// Status is the HTTP status of the answer (200 for a stream).
	Status int
}

// minCached and cacheStep are OpenAI's automatic caching granularity:
// prompts of 1024 tokens or more, cached in steps of 128.
const (
	minCached = 1024
	cacheStep = 128
)

// EstimateTokens estimates the prompt tokens of a chat-completions body,
// deterministically: ceil(n/4) for the n bytes of each message's and
// each tool's JSON, plus 3 a message. It returns the total and the
// running total after each message, tools first.
func EstimateTokens(body []byte) (total int, afterMessage []int) {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0, nil
	}
	for _, t := range req.Tools {
		total += (len(compact(t)) + 3) / 4
	}
	for _, m := range req.Messages {
		total += 3 + (len(compact(m))+3)/4
		afterMessage = append(afterMessage, total)
	}
	return total, afterMessage
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// cachedPrefix returns the tokens of the longest whole-message prefix of
// body seen in an earlier request, as the cache reports it, and
// remembers body's prefixes. s.mu is held.
func (s *Server) cachedPrefix(body []byte, after []int) int {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	if s.prefixes == nil {
		s.prefixes = map[[32]byte]bool{}
	}
	h := sha256.New()
	for _, t := range req.Tools {
		h.Write(compact(t))
	}
	cached := 0
	for i, m := range req.Messages {
		h.Write(compact(m))
		var key [32]byte
		copy(key[:], h.Sum(nil))
		if s.prefixes[key] {
			cached = after[i]
		}
		s.prefixes[key] = true
	}
	if cached < minCached {
		return 0
	}
	return cached / cacheStep * cacheStep
}

// Reply is one scripted answer. Build it with Text, ToolCalls or an error
// constructor; the zero value streams an empty response that stops.
type Reply struct {
	// ID and Model name the completion; defaults are "chatcmpl-N" and the
	// request's model.
	ID    string
	Model string
	// Text is streamed as content deltas, one piece per chunk.
	Text []string
	// ToolCalls are streamed after the text, one after the other.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise.
	FinishReason string
	// Usage is reported in a last chunk when the request sets
	// stream_options.include_usage; a zero Usage is estimated from the
	// request and reply sizes.
	Usage Usage

	// Status, when not 0, makes the reply a plain HTTP response, Status with
	// Header and Body, and no stream: an error, or with 200 a server that
	// ignored "stream": true.
	Status int
	Header http.Header
	Body   string

	// Raw, when not nil, is streamed instead of the events built from the
	// fields above: each string is the payload of one "data:" event, sent
	// verbatim (add "[DONE]" yourself).
	Raw []string

	// cut, hold, end and fail are 1 + the number of data events to send
	// before cutting the connection, stalling, ending the body, or sending
	// failure; 0 means never.
	cut, hold, end, fail int
	failure              string
}

// ToolCall is a function call the model makes.
type ToolCall struct {
	// ID is the call's id; empty sends no id, as some servers do.
	ID   string
	Name string
	// Arguments are the pieces of the JSON arguments as streamed, one piece
	// per chunk; their concatenation is the arguments object.
	Arguments []string
}

// Usage is the token usage a reply reports.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	// CachedTokens is reported as prompt_tokens_details.cached_tokens, a
	// part of PromptTokens.
	CachedTokens int
}

// Text returns a reply that streams text in the given pieces.
func Text(pieces ...string) Reply { return Reply{Text: pieces} }

// ToolCalls returns a reply that streams the given tool calls.
func ToolCalls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Error returns an HTTP error reply with OpenAI's error body:
// {"error":{"message","type","param","code"}}. An empty param or code is
// sent as null.
func Error(status int, typ, code, param, message string) Reply {
	e := map[string]any{"message": message, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	body, _ := json.Marshal(map[string]any{"error": e})
	return Reply{
		Status: status,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   string(body),
	}
}

// RateLimited returns a 429 rate_limit_exceeded reply carrying the given
// retry-after header value (seconds or an HTTP date; empty sends none).
func RateLimited(retryAfter string) Reply {
	r := Error(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "",
		"Rate limit reached for requests (fake server). Wait before trying again.")
	if retryAfter != "" {
		r.Header.Set("Retry-After", retryAfter)
	}
	return r
}

// ServerError returns a 500 server_error reply.
func ServerError() Reply {
	return Error(http.StatusInternalServerError, "server_error", "", "",
		"The fake server failed while handling the request.")
}

// ContextLengthExceeded returns the 400 error OpenAI sends when the
// messages and the completion do not fit the model's window: code
// context_length_exceeded, with both numbers in the message (requested
// counts 1000 completion tokens).
func ContextLengthExceeded(limit, requested int) Reply {
	return contextLength(limit, requested-1000, 1000)
}

func contextLength(limit, messages, completion int) Reply {
	msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
		"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
		limit, messages+completion, messages, completion)
	return Error(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages", msg)
}

// CutAfter returns r changed to drop the connection, without ending the
// chunked body, after n data events.
func (r Reply) CutAfter(n int) Reply { r.cut = n + 1; return r }

// HoldAfter returns r changed to stall after n data events until the client
// goes away (cancels or closes the connection).
func (r Reply) HoldAfter(n int) Reply { r.hold = n + 1; return r }

// EndAfter returns r changed to end the response body normally, but
// without the rest of the stream and without [DONE], after n data events.
func (r Reply) EndAfter(n int) Reply { r.end = n + 1; return r }

// ErrorAfter returns r changed to send, after n data events, the body of
// the error reply e as an error event, and end the stream there, as
// servers do when a request fails mid-stream.
func (r Reply) ErrorAfter(n int, e Reply) Reply { r.fail, r.failure = n+1, e.Body; return r }

// NewServer starts a server that answers with replies in order, and closes
// it when the test ends. A request beyond the script fails the test and
// gets a 500.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// New starts a server configured by cfg, for benchmarks and programs as
// well as tests; Close stops it. Its script starts empty (Push).
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, APIKey: cfg.APIKey, configured: true}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close shuts the server down; NewServer already arranges it at the end of
// the test.
func (s *Server) Close() { s.srv.Close() }

// wireRequest is the part of a request body the server acts on.
type wireRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	i := len(s.requests)
	id := "req_fake_" + strconv.Itoa(i+1)
	s.requests = append(s.requests, Request{ID: id, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	w.Header().Set("X-Request-Id", id)
	answer := func(reply Reply) {
		s.mu.Lock()
		s.requests[i].Status = reply.Status
		s.mu.Unlock()
		writeReply(w, reply)
	}

	if r.Method != http.MethodPost || r.URL.Path != Path {
		answer(Error(http.StatusNotFound, "invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path)))
		return
	}
	if s.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.APIKey {
		answer(Error(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
			"Incorrect API key provided to the fake server."))
		return
	}
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		answer(Error(http.StatusBadRequest, "invalid_request_error", "", "",
			"The request body is not valid JSON: "+err.Error()))
		return
	}
	if !req.Stream {
		answer(Error(http.StatusBadRequest, "invalid_request_error", "", "stream",
			"The fake server answers only streaming requests (\"stream\": true)."))
		return
	}
	tokens, after := EstimateTokens(body)
	completion := max(req.MaxTokens, req.MaxCompletionTokens)
	s.mu.Lock()
	rec := &s.requests[i]
	rec.Tokens, rec.Completion = tokens, completion
	tooLong := s.cfg.ContextWindow > 0 && tokens+completion > s.cfg.ContextWindow
	if !tooLong {
		rec.Cached = s.cachedPrefix(body, after)
	}
	cached := rec.Cached
	snapshot := *rec
	s.mu.Unlock()
	if tooLong {
		answer(contextLength(s.cfg.ContextWindow, tokens, completion))
		return
	}

	s.mu.Lock()
	n := s.served
	var reply Reply
	ok := n < len(s.replies)
	if ok {
		reply = s.replies[n]
		s.served++
	}
	s.mu.Unlock()
	if !ok && s.cfg.Respond != nil {
		reply, ok = s.cfg.Respond(&snapshot), true
	}
	if !ok {
		if s.t != nil {
			s.t.Errorf("openaitest: request %d has no scripted reply", n+1)
		}
		answer(ServerError())
		return
	}
	if reply.Status != 0 {
		answer(reply)
		return
	}
	if s.configured && reply.Usage == (Usage{}) {
		// A configured server charges what it estimated.
		reply.Usage = Usage{PromptTokens: tokens, CachedTokens: cached, CompletionTokens: completionTokens(reply)}
	}
	s.mu.Lock()
	s.requests[i].Status = http.StatusOK
	s.mu.Unlock()
	events := reply.Raw
	if events == nil {
		events = Events(reply, n+1, req.Model, req.StreamOptions.IncludeUsage, len(body))
	}
	stream(w, r, reply, events)
}

// completionTokens estimates a reply's tokens: a quarter of its bytes.
func completionTokens(r Reply) int {
	n := 0
	for _, t := range r.Text {
		n += len(t)
	}
	for _, c := range r.ToolCalls {
		n += len(c.Name)
		for _, a := range c.Arguments {
			n += len(a)
		}
	}
	return n/4 + 1
}

func writeReply(w http.ResponseWriter, r Reply) {
	for k, v := range r.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.Status)
	io.WriteString(w, r.Body)
}

func stream(w http.ResponseWriter, r *http.Request, reply Reply, events []string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		if reply.cut == i+1 {
			rc.Flush()
			panic(http.ErrAbortHandler) // drops the connection mid-body
		}
		if reply.hold == i+1 {
			rc.Flush()
			<-r.Context().Done()
			return
		}
		if reply.end == i+1 {
			return
		}
		if reply.fail == i+1 {
			io.WriteString(w, "data: "+reply.failure+"\n\n")
			return
		}
		io.WriteString(w, "data: "+ev+"\n\n")
		rc.Flush()
	}
}

// Events returns the data payloads the server streams for reply, the
// n-th completion it serves, answering a request for model whose body had
// requestBytes bytes: chunk objects in order and "[DONE]" last.
func Events(reply Reply, n int, model string, includeUsage bool, requestBytes int) []string {
	id := reply.ID
	if id == "" {
		id = "chatcmpl-" + strconv.Itoa(n)
	}
	if reply.Model != "" {
		model = reply.Model
	}
	var events []string
	add := func(choices []wireChoice, usage *wireUsage) {
		c := wireChunk{
			ID: id, Object: "chat.completion.chunk", Created: Created, Model: model,
			SystemFingerprint: "fp_fake", Choices: choices, Usage: usage,
		}
		if choices == nil {
			c.Choices = []wireChoice{}
		}
		b, err := json.Marshal(c)
		if err != nil {
			panic(err) // the wire types always encode
		}
		events = append(events, string(b))
	}
	delta := func(d wireDelta) []wireChoice { return []wireChoice{{Delta: d}} }

	// The first chunk carries the role, as OpenAI's do.
	first := wireDelta{Role: "assistant"}
	empty := ""
	if len(reply.ToolCalls) == 0 {
		first.Content = &empty
	}
	add(delta(first), nil)

	completion := 0
	for _, piece := range reply.Text {
		add(delta(wireDelta{Content: &piece}), nil)
		completion++
	}
	for i, call := range reply.ToolCalls {
		head := wireToolCall{Index: i, ID: call.ID, Function: wireFunction{Name: call.Name}}
		if call.ID != "" {
			head.Type = "function"
		}
		add(delta(wireDelta{ToolCalls: []wireToolCall{head}}), nil)
		for _, piece := range call.Arguments {
			add(delta(wireDelta{ToolCalls: []wireToolCall{{Index: i, Function: wireFunction{Arguments: piece}}}}), nil)
			completion++
		}
	}

	finish := reply.FinishReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	add([]wireChoice{{Delta: wireDelta{}, FinishReason: &finish}}, nil)

	if includeUsage {
		u := reply.Usage
		if u == (Usage{}) {
			u = Usage{PromptTokens: requestBytes/4 + 1, CompletionTokens: completion + 1}
		}
		add(nil, &wireUsage{
			PromptTokens:     u.PromptTokens,
			CompletionTokens: u.CompletionTokens,
			TotalTokens:      u.PromptTokens + u.CompletionTokens,
			PromptDetails:    wirePromptDetails{CachedTokens: u.CachedTokens},
		})
	}
	return append(events, "[DONE]")
}

// The wire types below give chunks the field order and nulls of the real
// API.

type wireChunk struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens      int                   `json:"prompt_tokens"`
	CompletionTokens  int                   `json:"completion_tokens"`
	TotalTokens       int                   `json:"total_tokens"`
	PromptDetails     wirePromptDetails     `json:"prompt_tokens_details"`
	CompletionDetails wireCompletionDetails `json:"completion_tokens_details"`
}

type wirePromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

type wireCompletionDetails struct {
	ReasoningTokens    int `json:"reasoning_tokens"`
	AudioTokens        int `json:"audio_tokens"`
	AcceptedPrediction int `json:"accepted_prediction_tokens"`
	RejectedPrediction int `json:"rejected_prediction_tokens"`
}

// SplitEvery splits s into pieces of at most n characters, for streaming
// text or arguments in many chunks.
func SplitEvery(s string, n int) []string {
	if n <= 0 {
		n = 1
	}
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}
