package longrun

import (
	"encoding/json"
	"net/http"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

// Providers a program can be run through.
const (
	// ProviderAnthropic is the Messages API (model/modeltest), which
	// clears, caches and bills as Anthropic's does.
	ProviderAnthropic = "anthropic"
	// ProviderOpenAI is an OpenAI-compatible chat-completions server
	// (openaitest.New): no server-side clearing, automatic prefix
	// caching, the window enforced with context_length_exceeded.
	ProviderOpenAI = "openai"
)

// chatServer is the fake OpenAI-compatible server of a run: it answers
// through the same player as the Anthropic one, each chat request seen
// as the Messages request it stands for.
type chatServer struct {
	srv *openaitest.Server
	pl  *player
}

func newChatServer(pl *player) *chatServer {
	c := &chatServer{pl: pl}
	c.srv = openaitest.New(openaitest.Config{ContextWindow: Window, Respond: func(q *openaitest.Request) openaitest.Reply {
		return chatReply(pl.respond(asMessages(q)))
	}})
	return c
}

// requests are the server's requests as Messages requests, for the report.
func (c *chatServer) requests() []*modeltest.Request {
	var out []*modeltest.Request
	for _, q := range c.srv.Requests() {
		out = append(out, asMessages(&q))
	}
	return out
}

// chatBody is the part of a chat-completions body the player reads.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// asMessages is a chat request as the Messages request it stands for:
// the system message as the system prompt, tool messages as tool_result
// blocks of the user message they are part of, tool calls as tool_use
// blocks; the usage is what the server charged (cached tokens as cache
// reads; chat completions bill no cache writes). A request refused as
// too long counts its prompt and completion, as the refusal does.
func asMessages(q *openaitest.Request) *modeltest.Request {
	r := &modeltest.Request{ID: q.ID, Method: q.Method, Path: "/v1/messages", Body: q.Body, Status: q.Status, Tokens: int64(q.Tokens)}
	if q.Status == http.StatusBadRequest {
		r.Tokens = int64(q.Tokens + q.Completion)
	}
	if q.Status == http.StatusOK {
		r.Usage = model.Usage{InputTokens: int64(q.Tokens - q.Cached), CacheReadInputTokens: int64(q.Cached)}
	}
	var body chatBody
	if json.Unmarshal(q.Body, &body) != nil {
		return r
	}
	p := &modeltest.Params{Model: body.Model}
	for _, t := range body.Tools {
		name, _ := json.Marshal(t.Function.Name)
		p.Tools = append(p.Tools, map[string]json.RawMessage{"name": name})
	}
	addUser := func(b model.Block) {
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == model.RoleUser {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, b)
			return
		}
		p.Messages = append(p.Messages, model.Message{Role: model.RoleUser, Content: []model.Block{b}})
	}
	for _, m := range body.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			p.System = append(p.System, model.TextBlock(text))
		case "user":
			addUser(model.TextBlock(text))
		case "tool":
			addUser(model.ToolResultBlock(m.ToolCallID, text, false))
		case "assistant":
			var blocks []model.Block
			if text != "" {
				blocks = append(blocks, model.TextBlock(text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, modeltest.ToolUse(c.ID, c.Function.Name, c.Function.Arguments))
			}
			p.Messages = append(p.Messages, model.Message{Role: model.RoleAssistant, Content: blocks})
		}
	}
	r.Params, r.Seen = p, p.Messages
	return r
}

// contentText is a message's content, sent as a string or as parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &parts)
	out := ""
	for _, part := range parts {
		if part.Type == "text" {
			out += part.Text
		}
	}
	return out
}

// chatReply streams the player's reply as chat-completion chunks.
func chatReply(r modeltest.Reply) openaitest.Reply {
	var out openaitest.Reply
	for _, b := range r.Content {
		switch b.Type {
		case model.BlockText:
			out.Text = append(out.Text, openaitest.SplitEvery(b.Text, 64)...)
		case model.BlockToolUse:
			out.ToolCalls = append(out.ToolCalls, openaitest.ToolCall{ID: b.ID, Name: b.Name, Arguments: openaitest.SplitEvery(string(b.Input), 64)})
		}
	}
	return out
}
