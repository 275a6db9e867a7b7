package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// TestTranscriptReadsAsClaudeCodes writes a session through the engine and
// the recorder, then reads it back with a reader written here from Claude
// Code's documented format alone — maps of JSON, no cairn types — and
// checks both that every line has the fields Claude Code's readers expect
// and that the conversation it rebuilds is the one cairn resumes.
func TestTranscriptReadsAsClaudeCodes(t *testing.T) {
	look := &fakeTool{name: "Look", concurrent: true, run: func(ctx context.Context, in json.RawMessage) (tool.Result, error) {
		return tool.Result{Content: []model.Block{model.TextBlock("saw " + string(in))}, Detail: map[string]any{"type": "text"}}, nil
	}}
	m := script(
		call(model.TextBlock("Two looks."), use("t1", "Look", `1`), use("t2", "Look", `2`)),
		say("Both seen."),
		say("Second answer."),
	)
	h := newHarness(t, m, []tool.Tool{look}, nil)
	for _, p := range []string{"hi", "and then?"} {
		if _, err := h.run(t, t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	src, err := h.store.OpenSource(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	got := ccRead(t, data)
	if len(got) != 6 || !strings.Contains(got[2], "result:t1 | result:t2") {
		t.Errorf("unexpected shape: %q", got)
	}
	if diff := cmp.Diff(summarize(h.reload(t).Messages()), got); diff != "" {
		t.Errorf("a Claude Code reader sees another conversation (-cairn +cc):\n%s", diff)
	}
}

// ccRead rebuilds the conversation of a transcript the way Claude Code's
// loader is documented to (COMPAT.md): chain lines into a map by uuid,
// the newest leaf, parents walked back, results of parallel calls put back
// after their response, lines of one response merged, consecutive user
// lines merged.
func ccRead(t *testing.T, data []byte) []string {
	t.Helper()
	type line = map[string]any
	byUUID := map[string]line{}
	var order []string
	children := map[string][]string{}
	for i, raw := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		typ, _ := l["type"].(string)
		switch typ {
		case "user", "assistant", "attachment", "system":
		case "last-prompt":
			if _, ok := l["sessionId"].(string); !ok {
				t.Errorf("line %d: last-prompt without sessionId", i+1)
			}
			continue
		default:
			continue
		}
		for _, k := range []string{"parentUuid", "isSidechain", "userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "timestamp", "uuid"} {
			if _, ok := l[k]; !ok {
				t.Errorf("line %d (%s): no %q", i+1, typ, k)
			}
		}
		if ts, _ := l["timestamp"].(string); ts != "" {
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", ts); err != nil {
				t.Errorf("line %d: timestamp %q is not ISO 8601 with milliseconds", i+1, ts)
			}
		}
		msg, _ := l["message"].(map[string]any)
		if typ == "assistant" {
			content, _ := msg["content"].([]any)
			if msg["id"] == nil || l["requestId"] == nil || len(content) != 1 || msg["usage"] == nil {
				t.Errorf("line %d: an assistant line needs message.id, requestId, usage and exactly one content block", i+1)
			}
		}
		if isResult(msg) && (l["toolUseResult"] == nil || l["sourceToolAssistantUUID"] == nil) {
			t.Errorf("line %d: a tool result needs toolUseResult and sourceToolAssistantUUID", i+1)
		}
		id := l["uuid"].(string)
		byUUID[id] = l
		order = append(order, id)
		if p, ok := l["parentUuid"].(string); ok {
			children[p] = append(children[p], id)
		}
	}
	// The newest line that nothing points at is the leaf.
	leaf := ""
	for i := len(order) - 1; i >= 0 && leaf == ""; i-- {
		if len(children[order[i]]) == 0 {
			leaf = order[i]
		}
	}
	var chain []string
	for id := leaf; id != ""; {
		chain = append(chain, id)
		id, _ = byUUID[id]["parentUuid"].(string)
	}
	slices.Reverse(chain)
	// Re-attach results that hang off a response's other lines.
	var full []string
	on := map[string]bool{}
	for _, id := range chain {
		on[id] = true
	}
	for i, id := range chain {
		full = append(full, id)
		mid := msgID(byUUID[id])
		if mid == "" || (i+1 < len(chain) && msgID(byUUID[chain[i+1]]) == mid) {
			continue
		}
		for _, member := range order {
			if msgID(byUUID[member]) != mid {
				continue
			}
			for _, c := range children[member] {
				if !on[c] && isResult(byUUID[c]["message"].(map[string]any)) {
					on[c] = true
					full = append(full, c)
				}
			}
		}
	}
	// Render: merge a response's lines, and consecutive user lines.
	type msg struct {
		role   string
		blocks []string
		id     string
	}
	var out []msg
	for _, id := range full {
		l := byUUID[id]
		var role string
		var blocks []string
		switch l["type"] {
		case "attachment":
			role = "user"
			for _, r := range l["rendered"].([]any) {
				for _, b := range r.(map[string]any)["content"].([]any) {
					blocks = append(blocks, block(b))
				}
			}
		case "user", "assistant":
			m := l["message"].(map[string]any)
			role = m["role"].(string)
			switch c := m["content"].(type) {
			case string:
				blocks = []string{"text:" + c}
			case []any:
				for _, b := range c {
					blocks = append(blocks, block(b))
				}
			}
		default:
			continue
		}
		mid := msgID(l)
		if n := len(out); n > 0 && out[n-1].role == role && (role == "user" || (mid != "" && out[n-1].id == mid)) {
			out[n-1].blocks = append(out[n-1].blocks, blocks...)
			continue
		}
		out = append(out, msg{role, blocks, mid})
	}
	var s []string
	for _, m := range out {
		// Tool results lead a user message, as the API requires.
		slices.SortStableFunc(m.blocks, func(a, b string) int {
			return boolInt(!strings.HasPrefix(a, "result:")) - boolInt(!strings.HasPrefix(b, "result:"))
		})
		s = append(s, m.role+" "+strings.Join(m.blocks, " | "))
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func msgID(l map[string]any) string {
	if l["type"] != "assistant" {
		return ""
	}
	id, _ := l["message"].(map[string]any)["id"].(string)
	return id
}

func isResult(msg map[string]any) bool {
	c, _ := msg["content"].([]any)
	if len(c) == 0 {
		return false
	}
	b, _ := c[0].(map[string]any)
	return b["type"] == "tool_result"
}

func block(b any) string {
	m := b.(map[string]any)
	switch m["type"] {
	case "text":
		return "text:" + m["text"].(string)
	case "tool_use":
		return "use:" + m["id"].(string)
	case "tool_result":
		return fmt.Sprintf("result:%s", m["tool_use_id"])
	}
	return fmt.Sprint(m["type"])
}

// summarize renders messages the way ccRead does.
func summarize(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		var parts []string
		for _, b := range m.Content {
			switch b.Type {
			case model.BlockText:
				parts = append(parts, "text:"+b.Text)
			case model.BlockToolUse:
				parts = append(parts, "use:"+b.ID)
			case model.BlockToolResult:
				parts = append(parts, "result:"+b.ToolUseID)
			}
		}
		out = append(out, m.Role+" "+strings.Join(parts, " | "))
	}
	return out
}
