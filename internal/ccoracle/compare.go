package ccoracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// Conversation requests: what the model was sent, as cairn models it.

// FirstAccepted returns the messages of the first /v1/messages request the
// server answered with 200. Claude Code 2.1.332 first sends context as
// role "system" messages; the fake server refuses those as the API does
// (400) and Claude Code resends the same context as user text, so the
// accepted request is the one that describes the conversation.
func FirstAccepted(reqs []*modeltest.Request) ([]model.Message, error) {
	for _, r := range reqs {
		if r.Path == "/v1/messages" && r.Status == 200 && r.Params != nil {
			return r.Params.Messages, nil
		}
	}
	return nil, fmt.Errorf("no accepted /v1/messages request among %d", len(reqs))
}

// Before returns the conversation a resume carried: the messages before
// the last one that holds a text block equal to probe (the resume's
// prompt), and, from that message, the blocks before the probe that are
// not the resume's own (newTurn: the texts the resume attached to its
// prompt, each taken once). Those blocks are the old conversation's
// trailing user content, which the API's turn-taking joins with the new
// prompt; the newline Claude Code adds to the last of them at the seam with
// the new turn belongs to the new turn and is removed. It fails when probe
// was not sent.
func Before(msgs []model.Message, probe string, newTurn []string) ([]model.Message, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		at := -1
		for k, b := range msgs[i].Content {
			if b.Type == model.BlockText && b.Text == probe {
				at = k
			}
		}
		if at < 0 {
			continue
		}
		left := map[string]int{}
		for _, t := range newTurn {
			left[t]++
		}
		var old []model.Block
		for _, b := range msgs[i].Content[:at] {
			if b.Type == model.BlockText {
				if t := strings.TrimSuffix(b.Text, "\n"); left[t] > 0 || left[b.Text] > 0 {
					if left[b.Text] > 0 {
						left[b.Text]--
					} else {
						left[t]--
					}
					continue
				}
			}
			old = append(old, b)
		}
		out := append([]model.Message(nil), msgs[:i]...)
		if len(old) > 0 {
			if last := &old[len(old)-1]; last.Type == model.BlockText {
				last.Text = strings.TrimSuffix(last.Text, "\n")
			}
			out = append(out, model.Message{Role: model.RoleUser, Content: old})
		}
		return out, nil
	}
	return nil, fmt.Errorf("the prompt %q is not in the request", probe)
}

// Normalize removes what legitimately differs between two senders of one
// conversation, so the rest can be compared block by block:
//   - cache_control: breakpoints belong to a request, not to the
//     conversation (each request moves its message breakpoint to its end);
//   - adjacent messages of one role are joined: the API reads them as one
//     turn, and Claude Code sometimes sends an attachment as a user message
//     of its own before the next one;
//   - a user message's text given as a string is one text block;
//   - the subagent tool is named Agent: Claude Code 2.1.332 calls cairn's
//     (and its own earlier versions') Task tool that, renaming it on
//     resume.
//
// Anything else (text, order, tool calls and results, images) must match.
func Normalize(msgs []model.Message) []model.Message {
	var out []model.Message
	for _, m := range msgs {
		var content []model.Block
		for _, b := range m.Content {
			b = withoutCacheControl(b)
			if b.Type == model.BlockToolUse && b.Name == "Task" {
				b.Name = "Agent"
			}
			if b.Type == model.BlockToolResult {
				b.Content = normalResult(b.Content)
			}
			content = append(content, b)
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, content...)
			continue
		}
		out = append(out, model.Message{Role: m.Role, Content: content})
	}
	return out
}

// normalResult writes a tool result's content, a string or a list of
// blocks, as a list of blocks without cache_control.
func normalResult(raw json.RawMessage) json.RawMessage {
	blocks, err := model.DecodeContent(raw)
	if err != nil {
		return raw
	}
	for i := range blocks {
		blocks[i] = withoutCacheControl(blocks[i])
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return raw
	}
	return b
}

func withoutCacheControl(b model.Block) model.Block {
	if _, ok := b.Extra["cache_control"]; !ok {
		return b
	}
	extra := make(map[string]json.RawMessage, len(b.Extra))
	for k, v := range b.Extra {
		if k != "cache_control" {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		extra = nil
	}
	b.Extra = extra
	return b
}

// Render turns messages into lines a person can diff: one per block,
// "role type: detail".
func Render(msgs []model.Message) []string {
	var out []string
	for i, m := range msgs {
		for _, b := range m.Content {
			out = append(out, fmt.Sprintf("%d %s %s", i, m.Role, blockSig(b)))
		}
	}
	return out
}

// Carries reports whether have carries every message of want, in order:
// for each message of want, a later message of have with its role holds
// all of its blocks (in any order: a reader places attachments and the
// prompt of a turn by its own rule, and the newline at a text seam moves
// with them, so texts are compared without trailing newlines). have may
// hold more messages and blocks. It returns the first block of want not
// found, or "".
func Carries(have, want []model.Message) string {
	have, want = Normalize(have), Normalize(want)
	j := 0
	for _, w := range want {
		first := "" // what the first message of the role lacks
		found := false
		for ; j < len(have); j++ {
			if have[j].Role != w.Role {
				continue
			}
			miss := missing(have[j], w)
			if miss == "" {
				found = true
				j++
				break
			}
			if first == "" {
				first = miss
			}
		}
		if !found {
			if first == "" && len(w.Content) > 0 {
				first = trimSig(w.Content[0])
			}
			return w.Role + " " + shorten(first, 300)
		}
	}
	return ""
}

func missing(have, want model.Message) string {
	count := map[string]int{}
	for _, b := range have.Content {
		count[trimSig(b)]++
	}
	for _, b := range want.Content {
		sig := trimSig(b)
		if count[sig] == 0 {
			return sig
		}
		count[sig]--
	}
	return ""
}

func trimSig(b model.Block) string {
	if b.Type == model.BlockText {
		b.Text = strings.TrimRight(b.Text, "\n")
	}
	return blockSig(b)
}

func blockSig(b model.Block) string {
	switch b.Type {
	case model.BlockText:
		return "text: " + b.Text
	case model.BlockToolUse:
		var in bytes.Buffer
		_ = json.Compact(&in, b.Input)
		return fmt.Sprintf("tool_use %s %s %s", b.ID, b.Name, in.String())
	case model.BlockToolResult:
		errFlag := ""
		if b.IsError != nil && *b.IsError {
			errFlag = " error"
		}
		return fmt.Sprintf("tool_result %s%s: %s", b.ToolUseID, errFlag, resultSig(b.Content))
	case model.BlockImage:
		raw, _ := json.Marshal(b)
		return "image " + shorten(string(raw), 120)
	case model.BlockThinking:
		return "thinking: " + b.Thinking
	}
	raw, _ := json.Marshal(b)
	return b.Type + " " + string(raw)
}

func resultSig(raw json.RawMessage) string {
	blocks, err := model.DecodeContent(raw)
	if err != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == model.BlockText {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+blockSig(b)+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
