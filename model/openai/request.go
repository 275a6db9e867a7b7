package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/cairn-dev/cairn/model"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// errorPrefix starts the text of a tool result that reports a failure:
// chat messages have no is_error flag, so the model learns it from the text.
const errorPrefix = "Error: "

// emptyResult stands for a tool result with no content; some servers
// reject empty tool messages.
const emptyResult = "(no output)"

// params converts req to a chat-completions request body.
func (c *Client) params(req *model.Request) (sdk.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return sdk.ChatCompletionNewParams{}, errors.New("openai: no model name given; pass --model, e.g. gpt-4.1, or llama3.1 for Ollama")
	}
	msgs, err := chatMessages(req)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := chatTools(req.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	p := sdk.ChatCompletionNewParams{
		Model:    shared.ChatModel(req.Model),
		Messages: msgs,
		Tools:    tools,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{
			IncludeUsage: param.NewOpt(true),
		},
	}
	if req.MaxTokens > 0 {
		if c.maxCompletionTokens {
			p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	return p, nil
}

// chatMessages converts the system prompt and the messages of req:
//
//   - the system blocks become one system message;
//   - an assistant message becomes one assistant message, its text blocks
//     as content and its tool_use blocks as tool_calls;
//   - each tool_result of a user message becomes a tool message, and the
//     rest of the user message (text, images, and images that tool
//     results returned) a user message after them;
//   - thinking blocks and block types chat completions cannot carry are
//     dropped.
func chatMessages(req *model.Request) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if len(req.System) > 0 {
		texts := make([]string, 0, len(req.System))
		for _, b := range req.System {
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		}
		if len(texts) > 0 {
			out = append(out, sdk.SystemMessage(strings.Join(texts, "\n\n")))
		}
	}
	for i, m := range req.Messages {
		var err error
		switch m.Role {
		case model.RoleUser:
			out, err = appendUser(out, m.Content)
		case model.RoleAssistant:
			out = appendAssistant(out, m.Content)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	return out, nil
}

func appendAssistant(out []sdk.ChatCompletionMessageParamUnion, blocks []model.Block) []sdk.ChatCompletionMessageParamUnion {
	var texts []string
	var calls []sdk.ChatCompletionMessageToolCallUnionParam
	for _, b := range blocks {
		switch b.Type {
		case model.BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case model.BlockToolUse:
			args := "{}"
			if len(b.Input) > 0 {
				args = string(b.Input)
			}
			calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       b.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args},
				},
			})
		}
	}
	if len(texts) == 0 && len(calls) == 0 {
		return out // nothing a chat model can read, e.g. only thinking
	}
	msg := sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
	if len(texts) > 0 {
		msg.Content.OfString = param.NewOpt(strings.Join(texts, "\n\n"))
	}
	return append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &msg})
}

// userParts collects the content of the user message that follows a run of
// tool messages.
type userParts struct {
	parts  []sdk.ChatCompletionContentPartUnionParam
	images bool
}

func (u *userParts) text(s string) {
	if s != "" {
		u.parts = append(u.parts, sdk.TextContentPart(s))
	}
}

func (u *userParts) image(url string) {
	u.parts = append(u.parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}))
	u.images = true
}

// flush appends the collected parts as a user message: plain string content
// when it is all text, which every server accepts, and a list of parts
// otherwise.
func (u *userParts) flush(out []sdk.ChatCompletionMessageParamUnion) []sdk.ChatCompletionMessageParamUnion {
	if len(u.parts) == 0 {
		return out
	}
	var msg sdk.ChatCompletionMessageParamUnion
	if u.images {
		msg = sdk.UserMessage(u.parts)
	} else {
		texts := make([]string, len(u.parts))
		for i, p := range u.parts {
			texts[i] = p.OfText.Text
		}
		msg = sdk.UserMessage(strings.Join(texts, "\n\n"))
	}
	*u = userParts{}
	return append(out, msg)
}

func appendUser(out []sdk.ChatCompletionMessageParamUnion, blocks []model.Block) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var u userParts
	// after collects the images tool results returned: a tool message holds
	// only text, so they follow in the user message.
	var after userParts
	lastTool := -1 // this message's last tool message in out
	for _, b := range blocks {
		switch b.Type {
		case model.BlockText:
			u.text(b.Text)
		case model.BlockImage:
			url, err := imageURL(b)
			if err != nil {
				return nil, err
			}
			u.image(url)
		case model.BlockDocument:
			u.text(documentText(b))
		case model.BlockToolResult:
			out = u.flush(out)
			text, images, err := toolResult(b)
			if err != nil {
				return nil, err
			}
			out = append(out, sdk.ToolMessage(text, b.ToolUseID))
			lastTool = len(out) - 1
			if len(images) > 0 {
				after.text(fmt.Sprintf("The image output of tool call %s:", b.ToolUseID))
				for _, url := range images {
					after.image(url)
				}
			}
		}
	}
	if tool := len(out) - 1; lastTool == tool && tool >= 0 && len(after.parts) == 0 && !u.images && onlyTags(u.parts) && out[tool].OfTool.Content.OfString.Valid() {
		// The message's [id:…] tag after the results stays in the same
		// turn, in the last tool message, as it does in the Anthropic
		// message, rather than a user message of its own. Any other text
		// (an instruction, a reminder) is the person's or cairn's word, not
		// the tool's, and stays a user message.
		texts := []string{out[tool].OfTool.Content.OfString.Value}
		for _, p := range u.parts {
			texts = append(texts, p.OfText.Text)
		}
		out[tool].OfTool.Content.OfString = param.NewOpt(strings.Join(texts, "\n"))
		return out, nil
	}
	u.parts = append(after.parts, u.parts...)
	u.images = u.images || after.images
	return u.flush(out), nil
}

// toolResult returns the text of a tool_result block, its error flag as a
// prefix, and the data URLs of the images it holds.
func toolResult(b model.Block) (string, []string, error) {
	text := b.ResultText()
	var images []string
	var blocks []model.Block
	if len(b.Content) > 0 && b.Content[0] == '[' {
		if err := json.Unmarshal(b.Content, &blocks); err != nil {
			return "", nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
		}
	}
	for _, c := range blocks {
		if c.Type == model.BlockImage {
			url, err := imageURL(c)
			if err != nil {
				return "", nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
			}
			images = append(images, url)
		}
	}
	if text == "" {
		text = emptyResult
	}
	if b.IsError != nil && *b.IsError {
		text = errorPrefix + text
	}
	return text, images, nil
}

// source is the "source" field of an image or document block.
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

func blockSource(b model.Block) (source, error) {
	var s source
	raw, ok := b.Extra["source"]
	if !ok {
		return s, fmt.Errorf("%s block without a source", b.Type)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("%s block source: %w", b.Type, err)
	}
	return s, nil
}

// imageURL returns the image_url of an image block: a data URL for base64
// data, the URL itself for a url source.
func imageURL(b model.Block) (string, error) {
	s, err := blockSource(b)
	if err != nil {
		return "", err
	}
	switch s.Type {
	case "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, nil
	case "url":
		return s.URL, nil
	}
	return "", fmt.Errorf("image source type %q cannot be sent over chat completions", s.Type)
}

// documentText returns what the model sees of a document block: the text
// of a plain-text document, and a note for anything else (PDFs), which chat
// completions cannot carry.
func documentText(b model.Block) string {
	s, err := blockSource(b)
	if err == nil && s.Type == "text" {
		return s.Data
	}
	return "[A document was attached here, but this model provider cannot receive documents.]"
}

// chatTools converts tool specs to function tools.
func chatTools(specs []model.ToolSpec) ([]sdk.ChatCompletionToolUnionParam, error) {
	var out []sdk.ChatCompletionToolUnionParam
	for _, t := range specs {
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.InputSchema) > 0 {
			// Raw values keep the schema's numbers and nested key order.
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(t.InputSchema, &fields); err != nil {
				return nil, fmt.Errorf("openai: input schema of tool %q: %w", t.Name, err)
			}
			schema = make(shared.FunctionParameters, len(fields))
			for k, v := range fields {
				schema[k] = v
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		out = append(out, sdk.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}

// idTag matches a message's whole [id:…] tag, as the agent writes it.
var idTag = regexp.MustCompile(`^\[id:[0-9a-z]+\]$`)

// onlyTags reports whether parts are texts that are [id:…] tags, at least
// one.
func onlyTags(parts []sdk.ChatCompletionContentPartUnionParam) bool {
	for _, p := range parts {
		if p.OfText == nil || !idTag.MatchString(strings.TrimSpace(p.OfText.Text)) {
			return false
		}
	}
	return len(parts) > 0
}
