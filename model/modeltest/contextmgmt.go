package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Server-side context editing, as the API's context-management beta does
// it: a request's context_management edits are applied to the prompt
// before it is counted and cached, so a test sees what the server cleared
// in the usage it is charged and in the applied_edits it is told about.
//
// clear_thinking_20251015 removes the thinking blocks of all but the
// newest keep assistant turns (thinking_turns, 1 when left out; "all"
// keeps every one). For clear_tool_uses_20250919: When the prompt is over the
// edit's trigger (input_tokens, 100,000 when left out, or a count of
// tool_uses), the results of
// every tool use but the newest keep (tool_uses, 3 when left out) are
// replaced by ServerClearedText, oldest first, except tools named in
// exclude_tools; clear_tool_inputs (true, or a list of tool names) empties
// the calls' inputs too. An edit that would free fewer than clear_at_least
// input tokens is not applied. Each request is edited afresh: the client
// keeps sending its history whole. The edited prompt is what is counted,
// cached (so the cached prefix ends at the first cleared block) and held
// against the window, and what Request.Seen records as the model's view.

// ContextManagementBeta is the anthropic-beta value that enables
// context_management.
const ContextManagementBeta = "context-management-2025-06-27"

// ServerClearedText is what the server puts in place of a result it
// cleared.
const ServerClearedText = "[tool result cleared by context management]"

// AppliedEdit is one edit the server applied to a request's prompt, as the
// response's context_management.applied_edits reports it.
type AppliedEdit struct {
	Type            string `json:"type"`
	ClearedToolUses int    `json:"cleared_tool_uses,omitempty"`
	// ClearedThinkingTurns is clear_thinking_20251015's count.
	ClearedThinkingTurns int   `json:"cleared_thinking_turns,omitempty"`
	ClearedInputTokens   int64 `json:"cleared_input_tokens"`
}

const (
	clearToolUses = "clear_tool_uses_20250919"
	clearThinking = "clear_thinking_20251015"
)

// clearEdit is a clear_tool_uses_20250919 edit, defaults filled in.
type clearEdit struct {
	// thinking marks a clear_thinking_20251015 edit: thinking blocks of
	// all but the newest keep assistant turns are removed (keepAll: none).
	thinking, keepAll bool
	// trigger is in input tokens, or in tool uses when byUses.
	trigger, keep, atLeast int64
	byUses                 bool
	exclude                map[string]bool
	inputsAll              bool
	inputsOf               map[string]bool
}

// editContext applies the request's context_management edits to its
// prompt and returns the prompt to charge. It records what it applied in
// req.ContextEdits (an empty list when nothing was).
func editContext(req *Request, pr prompt, ttl time.Duration) (prompt, error) {
	p := req.Params
	req.Seen = p.Messages
	if len(p.ContextManagement) == 0 || isNull(p.ContextManagement) {
		return pr, nil
	}
	if !slices.Contains(req.Betas, ContextManagementBeta) {
		return pr, fmt.Errorf("context_management: Extra inputs are not permitted (send the anthropic-beta header %q to use it)", ContextManagementBeta)
	}
	edits, err := parseEdits(p.ContextManagement)
	if err != nil {
		return pr, err
	}
	req.ContextEdits = []AppliedEdit{}
	msgs := p.Messages
	for _, e := range edits {
		if e.thinking {
			edited, n := e.clearThinking(msgs)
			if n > 0 {
				q := *p
				q.Messages = edited
				epr, err := promptOf(&q, ttl)
				if err != nil {
					return pr, err
				}
				req.ContextEdits = append(req.ContextEdits, AppliedEdit{Type: clearThinking, ClearedThinkingTurns: n, ClearedInputTokens: pr.total - epr.total})
				msgs, pr = edited, epr
			}
			continue
		}
		if !e.triggered(msgs, pr.total) {
			continue
		}
		edited, n := e.apply(msgs)
		if n == 0 {
			continue
		}
		q := *p
		q.Messages = edited
		epr, err := promptOf(&q, ttl)
		if err != nil {
			return pr, err
		}
		cleared := pr.total - epr.total
		if cleared < e.atLeast {
			continue
		}
		req.ContextEdits = append(req.ContextEdits, AppliedEdit{Type: clearToolUses, ClearedToolUses: n, ClearedInputTokens: cleared})
		msgs, pr = edited, epr
	}
	req.Seen = msgs
	return pr, nil
}

func parseEdits(raw json.RawMessage) ([]clearEdit, error) {
	var cm struct {
		Edits []map[string]json.RawMessage `json:"edits"`
	}
	if err := json.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("context_management: %v", err)
	}
	var out []clearEdit
	for i, f := range cm.Edits {
		var typ string
		_ = json.Unmarshal(f["type"], &typ)
		if typ == clearThinking {
			e := clearEdit{thinking: true, keep: 1}
			if raw, ok := f["keep"]; ok && !isNull(raw) {
				var all string
				var v struct {
					Type  string `json:"type"`
					Value int64  `json:"value"`
				}
				switch {
				case json.Unmarshal(raw, &all) == nil && all == "all":
					e.keepAll = true
				case json.Unmarshal(raw, &v) == nil && v.Type == "thinking_turns" && v.Value >= 0:
					e.keep = v.Value
				default:
					return nil, fmt.Errorf("context_management.edits.%d.keep: want \"all\" or {\"type\": \"thinking_turns\", \"value\": n}", i)
				}
			}
			out = append(out, e)
			continue
		}
		if typ != clearToolUses {
			return nil, fmt.Errorf("context_management.edits.%d.type: %q is not supported by this server; use %q or %q", i, typ, clearToolUses, clearThinking)
		}
		e := clearEdit{trigger: 100_000, keep: 3}
		for _, t := range []struct {
			key, unit string
			dst       *int64
		}{{"trigger", "input_tokens", &e.trigger}, {"keep", "tool_uses", &e.keep}, {"clear_at_least", "input_tokens", &e.atLeast}} {
			raw, ok := f[t.key]
			if !ok || isNull(raw) {
				continue
			}
			var v struct {
				Type  string `json:"type"`
				Value int64  `json:"value"`
			}
			err := json.Unmarshal(raw, &v)
			// The trigger may also count tool uses.
			byUses := t.key == "trigger" && v.Type == "tool_uses"
			if err != nil || (v.Type != t.unit && !byUses) || v.Value < 0 {
				return nil, fmt.Errorf("context_management.edits.%d.%s: want {\"type\": %q, \"value\": n} with n ≥ 0", i, t.key, t.unit)
			}
			*t.dst = v.Value
			e.byUses = e.byUses || byUses
		}
		if raw, ok := f["exclude_tools"]; ok && !isNull(raw) {
			var names []string
			if err := json.Unmarshal(raw, &names); err != nil {
				return nil, fmt.Errorf("context_management.edits.%d.exclude_tools: %v", i, err)
			}
			e.exclude = setOf(names)
		}
		if raw, ok := f["clear_tool_inputs"]; ok && !isNull(raw) {
			var names []string
			if err := json.Unmarshal(raw, &e.inputsAll); err != nil {
				if err := json.Unmarshal(raw, &names); err != nil {
					return nil, fmt.Errorf("context_management.edits.%d.clear_tool_inputs: want a boolean or a list of tool names", i)
				}
				e.inputsOf = setOf(names)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// triggered reports whether the edit applies to a prompt of total tokens
// holding msgs: over the trigger's input tokens, or over its count of tool
// uses.
func (e clearEdit) triggered(msgs []model.Message, total int64) bool {
	if !e.byUses {
		return total > e.trigger
	}
	var n int64
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == model.BlockToolUse {
				n++
			}
		}
	}
	return n > e.trigger
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// apply clears all but the newest keep tool uses of msgs, returning the
// edited copy and how many uses it cleared. msgs is left as it is.
func (e clearEdit) apply(msgs []model.Message) ([]model.Message, int) {
	type use struct{ msg, blk int }
	var uses []use
	name := map[string]string{}
	result := map[string]use{}
	for i, m := range msgs {
		for j, b := range m.Content {
			switch b.Type {
			case model.BlockToolUse:
				if !e.exclude[b.Name] {
					uses = append(uses, use{i, j})
					name[b.ID] = b.Name
				}
			case model.BlockToolResult:
				result[b.ToolUseID] = use{i, j}
			}
		}
	}
	if int64(len(uses)) <= e.keep {
		return msgs, 0
	}
	out := slices.Clone(msgs)
	cloned := map[int]bool{}
	edit := func(u use) *model.Block {
		if !cloned[u.msg] {
			out[u.msg].Content = slices.Clone(out[u.msg].Content)
			cloned[u.msg] = true
		}
		return &out[u.msg].Content[u.blk]
	}
	placeholder := jsonw.String(ServerClearedText)
	n := 0
	for _, u := range uses[:int64(len(uses))-e.keep] {
		call := msgs[u.msg].Content[u.blk]
		r, ok := result[call.ID]
		if !ok {
			continue
		}
		if bytes.Equal(msgs[r.msg].Content[r.blk].Content, placeholder) {
			continue // cleared by an earlier edit
		}
		edit(r).Content = placeholder
		if e.inputsAll || e.inputsOf[name[call.ID]] {
			edit(u).Input = json.RawMessage("{}")
		}
		n++
	}
	return out, n
}

// clearThinking removes the thinking blocks of every assistant turn but
// the newest keep, returning the edited copy and how many turns lost some.
func (e clearEdit) clearThinking(msgs []model.Message) ([]model.Message, int) {
	if e.keepAll {
		return msgs, 0
	}
	var turns []int
	for i, m := range msgs {
		if m.Role == model.RoleAssistant {
			turns = append(turns, i)
		}
	}
	if int64(len(turns)) <= e.keep {
		return msgs, 0
	}
	out := msgs
	n := 0
	for _, i := range turns[:int64(len(turns))-e.keep] {
		var kept []model.Block
		for _, b := range msgs[i].Content {
			if b.Type != model.BlockThinking && b.Type != "redacted_thinking" {
				kept = append(kept, b)
			}
		}
		if len(kept) == len(msgs[i].Content) {
			continue
		}
		if n == 0 {
			out = slices.Clone(msgs)
		}
		out[i].Content = kept
		n++
	}
	return out, n
}

// contextManagementJSON is the response's context_management object, or
// nil when the request had none.
func contextManagementJSON(edits []AppliedEdit) json.RawMessage {
	if edits == nil {
		return nil
	}
	list, _ := jsonw.Marshal(edits)
	var w jsonw.Object
	w.Raw("applied_edits", list)
	return w.Bytes()
}
