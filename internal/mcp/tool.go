package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// MaxDescription is how many characters of a tool's description, and of
// a server's instructions, the model is shown; longer text is cut, as
// Claude Code cuts it, so one server cannot crowd every request.
const MaxDescription = 2048

// cut shortens text to MaxDescription characters, saying what was cut.
func cut(text, what string) string {
	if utf8.RuneCountInString(text) <= MaxDescription {
		return text
	}
	return string([]rune(text)[:MaxDescription]) + "… [" + what + " cut]"
}

// Normalize makes a server's or a tool's name fit a tool name, as Claude
// Code does: every character other than A-Z, a-z, 0-9, _ and - becomes _.
func Normalize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// ToolName is the name the model calls a server's tool by:
// mcp__<server>__<tool>, both parts normalized. Permission rules name it
// the same way (mcp__server__tool, or mcp__server for all its tools).
func ToolName(server, tool string) string {
	return "mcp__" + Normalize(server) + "__" + Normalize(tool)
}

// serverTool is one tool of a connected server, as a tool.Tool.
type serverTool struct {
	srv  *server
	name string // the server's own name for it
	spec model.ToolSpec
	// The server's hints: readOnlyHint, destructiveHint (false unless
	// the server says so).
	readOnly, destructive bool
}

func newTool(srv *server, t *sdk.Tool) *serverTool {
	st := &serverTool{srv: srv, name: t.Name}
	if a := t.Annotations; a != nil {
		st.readOnly = a.ReadOnlyHint
		st.destructive = a.DestructiveHint != nil && *a.DestructiveHint
	}
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		if b, err := jsonw.Marshal(t.InputSchema); err == nil && len(b) > 0 && b[0] == '{' {
			schema = b
		}
	}
	st.spec = model.ToolSpec{Name: ToolName(srv.cfg.Name, t.Name), Description: cut(t.Description, "description"), InputSchema: schema}
	return st
}

// Spec describes the tool as its server does.
func (t *serverTool) Spec() model.ToolSpec { return t.spec }

// ReadOnly is the server's readOnlyHint.
func (t *serverTool) ReadOnly(json.RawMessage) bool { return t.readOnly }

// Destructive is the server's destructiveHint.
func (t *serverTool) Destructive(json.RawMessage) bool { return t.destructive }

// ConcurrencySafe reports whether the tool is read-only.
func (t *serverTool) ConcurrencySafe(json.RawMessage) bool { return t.readOnly }

// errCallTimeout is the cause of a call that ran out of time.
var errCallTimeout = errors.New("the MCP tool call timed out")

// Run calls the tool on its server. A call the server fails, or that runs
// longer than the call timeout, is an error result the model reads;
// cancelling ctx cancels the call on the server and returns ctx's error.
func (t *serverTool) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	var args any = map[string]any{}
	if len(bytes.TrimSpace(input)) > 0 && !settings.IsNull(input) {
		args = input
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, t.srv.callTimeout, errCallTimeout)
	defer cancel()
	res, err := t.srv.session.CallTool(callCtx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	switch {
	case err == nil:
		return result(res), nil
	case ctx.Err() != nil:
		return tool.Result{}, ctx.Err()
	case errors.Is(context.Cause(callCtx), errCallTimeout):
		return tool.Errorf("The MCP tool %s did not finish within %s and was cancelled (MCP_TOOL_TIMEOUT sets the limit, in milliseconds).", t.spec.Name, t.srv.callTimeout), nil
	}
	return tool.Errorf("The MCP server %q could not run %s: %v", t.srv.cfg.Name, t.name, err), nil
}

// imageTypes are the image formats the model is shown.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// result turns a server's answer into what the model reads: text as text
// blocks, images as image blocks, and a short note for what the model
// cannot be shown (audio, binary resources). The transcript records the
// same content as the call's toolUseResult.
func result(res *sdk.CallToolResult) tool.Result {
	var blocks []model.Block
	text := func(s string) {
		if s != "" {
			blocks = append(blocks, model.TextBlock(s))
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text(c.Text)
		case *sdk.ImageContent:
			if imageTypes[c.MIMEType] && len(c.Data) > 0 {
				blocks = append(blocks, imageBlock(c.MIMEType, c.Data))
			} else {
				text(fmt.Sprintf("[an image of type %q (%d bytes) that cannot be shown]", c.MIMEType, len(c.Data)))
			}
		case *sdk.AudioContent:
			text(fmt.Sprintf("[audio of type %q (%d bytes), which cannot be shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			text(fmt.Sprintf("[resource %q: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Text != "":
				text(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			case imageTypes[r.MIMEType] && len(r.Blob) > 0:
				blocks = append(blocks, imageBlock(r.MIMEType, r.Blob))
			default:
				text(fmt.Sprintf("[resource %s of type %q (%d bytes), which cannot be shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			text(fmt.Sprintf("[content of a kind cairn does not show: %T]", c))
		}
	}
	if len(blocks) == 0 && res.StructuredContent != nil {
		if b, err := jsonw.Marshal(res.StructuredContent); err == nil {
			text(string(b))
		}
	}
	if len(blocks) == 0 {
		text("(the tool returned no content)")
	}
	r := tool.Result{Content: blocks, IsError: res.IsError}
	if !r.IsError {
		if len(blocks) == 1 && blocks[0].Type == model.BlockText {
			r.Detail = blocks[0].Text
		} else {
			r.Detail = blocks
		}
	}
	return r
}

// imageBlock is an image content block holding data.
func imageBlock(mediaType string, data []byte) model.Block {
	source, _ := jsonw.Marshal(struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}{"base64", mediaType, base64.StdEncoding.EncodeToString(data)})
	return model.Block{Type: model.BlockImage, Extra: map[string]json.RawMessage{"source": source}}
}
