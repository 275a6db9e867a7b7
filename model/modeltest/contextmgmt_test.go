package modeltest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// toolConversation is a request body with n Read calls, each answered by
// size bytes of output, and the given context_management.
func toolConversation(n, size int, cm string) string {
	msgs := []any{map[string]any{"role": "user", "content": "go"}}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		name := "Read"
		if i == 1 {
			name = "TodoWrite"
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{"file_path": fmt.Sprintf("/f%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat("x", size)}}})
	}
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	last["cache_control"] = map[string]any{"type": "ephemeral"}
	body := map[string]any{"model": "m", "max_tokens": 100, "stream": true, "messages": msgs}
	if cm != "" {
		body["context_management"] = json.RawMessage(cm)
	}
	b, _ := jsonw.Marshal(body)
	return string(b)
}

var beta = map[string]string{"anthropic-beta": modeltest.ContextManagementBeta}

// perUse is what clearing one result of toolConversation(n, 4000) frees:
// the block {"type":"tool_result","tool_use_id":"toolu_NN","content":…}
// loses its 4,000 bytes of content for the placeholder.
var perUse = modeltest.EstimateTokens(59+4000) - modeltest.EstimateTokens(59+len(modeltest.ServerClearedText))

func TestContextManagementClearsOldToolResults(t *testing.T) {
	tests := []struct {
		name string
		cm   string
		want []modeltest.AppliedEdit
	}{
		{"under the trigger", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":100000}}]}`,
			[]modeltest.AppliedEdit{}},
		{"keep 3 by default", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000}}]}`,
			[]modeltest.AppliedEdit{{Type: "clear_tool_uses_20250919", ClearedToolUses: 5, ClearedInputTokens: 5 * perUse}}},
		{"keep and exclude", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000},"keep":{"type":"tool_uses","value":5},"exclude_tools":["TodoWrite"]}]}`,
			[]modeltest.AppliedEdit{{Type: "clear_tool_uses_20250919", ClearedToolUses: 2, ClearedInputTokens: 2 * perUse}}},
		{"clear_thinking keeping all changes nothing", `{"edits":[{"type":"clear_thinking_20251015","keep":"all"},{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000}}]}`,
			[]modeltest.AppliedEdit{{Type: "clear_tool_uses_20250919", ClearedToolUses: 5, ClearedInputTokens: 5 * perUse}}},
		{"triggered by a count of tool uses", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"tool_uses","value":6},"keep":{"type":"tool_uses","value":4}}]}`,
			[]modeltest.AppliedEdit{{Type: "clear_tool_uses_20250919", ClearedToolUses: 4, ClearedInputTokens: 4 * perUse}}},
		{"under a count of tool uses", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"tool_uses","value":8}}]}`,
			[]modeltest.AppliedEdit{}},
		{"not enough to clear", `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000},"keep":{"type":"tool_uses","value":7},"clear_at_least":{"type":"input_tokens","value":2000}}]}`,
			[]modeltest.AppliedEdit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := modeltest.Start(t, modeltest.Config{})
			whole := toolConversation(8, 4000, "")
			if _, _, _, err := post(t, s, whole, nil); err != nil {
				t.Fatal(err)
			}
			res, events, _, err := post(t, s, toolConversation(8, 4000, tt.cm), beta)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v", res.StatusCode, err)
			}
			reqs := s.Requests()
			if diff := cmp.Diff(tt.want, reqs[1].ContextEdits); diff != "" {
				t.Errorf("applied edits (-want +got):\n%s", diff)
			}
			var cleared int64
			for _, e := range tt.want {
				cleared += e.ClearedInputTokens
			}
			total := func(r *modeltest.Request) int64 {
				u := r.Usage
				return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			}
			if got := total(reqs[0]) - total(reqs[1]); got != cleared {
				t.Errorf("charged %d fewer tokens, want the %d cleared", got, cleared)
			}
			// The response says what was applied.
			var delta struct {
				ContextManagement struct {
					AppliedEdits []modeltest.AppliedEdit `json:"applied_edits"`
				} `json:"context_management"`
			}
			for _, e := range events {
				if e.Event == "message_delta" {
					if err := json.Unmarshal([]byte(e.Data), &delta); err != nil {
						t.Fatal(err)
					}
				}
			}
			if diff := cmp.Diff(tt.want, delta.ContextManagement.AppliedEdits); diff != "" {
				t.Errorf("message_delta applied_edits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContextManagementCaching: the server caches the prompt it edited, so
// the same request sent again reads it all from the cache, and a request
// that clears one more result reads the prefix before it.
func TestContextManagementCaching(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := modeltest.Start(t, modeltest.Config{Now: func() time.Time { return now }})
	cm := `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000},"keep":{"type":"tool_uses","value":2}}]}`
	for _, body := range []string{toolConversation(6, 4000, cm), toolConversation(6, 4000, cm)} {
		if _, _, _, err := post(t, s, body, beta); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.Requests()
	if u := reqs[1].Usage; u.CacheReadInputTokens == 0 || u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != reqs[0].Usage.CacheCreationInputTokens {
		t.Errorf("the same edited request again: %+v after %+v", u, reqs[0].Usage)
	}
}

func TestContextManagementNeedsTheBeta(t *testing.T) {
	s := modeltest.Start(t, modeltest.Config{})
	res, _, body, err := post(t, s, toolConversation(2, 10, `{"edits":[{"type":"clear_tool_uses_20250919"}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, modeltest.ContextManagementBeta) {
		t.Errorf("without the beta: %d %s", res.StatusCode, body)
	}
	res, _, body, _ = post(t, s, toolConversation(2, 10, `{"edits":[{"type":"clear_everything"}]}`), beta)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "clear_everything") {
		t.Errorf("an unknown edit: %d %s", res.StatusCode, body)
	}
	// Without context_management the response reports none.
	_, events, _, _ := post(t, s, simple, nil)
	for _, e := range events {
		if strings.Contains(e.Data, "context_management") {
			t.Errorf("%s carries context_management without a request for it", e.Event)
		}
	}
}

// TestContextManagementIsWhatTheModelSees: the edits come before the window
// check (a prompt over the window that they bring under it is answered),
// Seen holds the placeholders where the model reads them, the newest
// results stay whole, and count_tokens counts the edited prompt.
func TestContextManagementIsWhatTheModelSees(t *testing.T) {
	cm := `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":1000},"keep":{"type":"tool_uses","value":2}}]}`
	body := toolConversation(6, 4000, cm)
	whole := toolConversation(6, 4000, "")
	s := modeltest.Start(t, modeltest.Config{ContextWindow: 4000})
	if res, _, _, _ := post(t, s, whole, nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("the unedited prompt is over the window, yet status %d", res.StatusCode)
	}
	if res, _, msg, _ := post(t, s, body, beta); res.StatusCode != http.StatusOK {
		t.Fatalf("the edited prompt fits, yet status %d: %s", res.StatusCode, msg)
	}
	r := s.Last()
	var got []string
	for _, m := range r.Seen {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				got = append(got, b.ResultText()[:min(len(b.ResultText()), 8)])
			}
		}
	}
	want := []string{"[tool re", "[tool re", "[tool re", "[tool re", "xxxxxxxx", "xxxxxxxx"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the model's view of the results (-want +got):\n%s", diff)
	}
	if r.Tokens != r.Usage.InputTokens+r.Usage.CacheReadInputTokens+r.Usage.CacheCreationInputTokens {
		t.Errorf("Tokens %d is not what was charged, %+v", r.Tokens, r.Usage)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages/count_tokens", strings.NewReader(body))
	req.Header.Set("anthropic-beta", modeltest.ContextManagementBeta)
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var count struct {
		InputTokens int64 `json:"input_tokens"`
	}
	if err := json.NewDecoder(res.Body).Decode(&count); err != nil || count.InputTokens != r.Tokens {
		t.Errorf("count_tokens: %d (%v), want %d", count.InputTokens, err, r.Tokens)
	}
}
