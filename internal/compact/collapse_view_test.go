package compact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// randomConversation is a conversation as the engine's history holds it:
// prompts, responses that call tools with their results, and the user
// messages that may follow one another live (an interruption marker, a
// prompt after a turn that ended on tool results).
func randomConversation(r *rand.Rand) []model.Message {
	var h []model.Message
	n := 0
	id := func() []string { n++; return []string{fmt.Sprintf("u%03d", n)} }
	words := func() string { return strings.Repeat("w", 400+r.IntN(4_000)) }
	prompts := 0
	prompt := func() model.Message {
		prompts++
		return model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(fmt.Sprintf("PROMPT-%d %s", prompts, words()))}, IDs: id()}
	}
	h = append(h, prompt())
	calls := 0
	for len(h) < 40+r.IntN(40) {
		if r.IntN(3) > 0 { // a step with tool calls
			a := model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock(words())}, IDs: id()}
			var results []model.Block
			for range 1 + r.IntN(2) {
				calls++
				use := fmt.Sprintf("toolu_%d", calls)
				a.Content = append(a.Content, model.Block{Type: model.BlockToolUse, ID: use, Name: "Bash", Input: json.RawMessage(`{}`)})
				results = append(results, model.ToolResultBlock(use, words(), false))
			}
			h = append(h, a, model.Message{Role: model.RoleUser, Content: results, IDs: id()})
			switch r.IntN(6) {
			case 0: // interrupted, then a new prompt
				h = append(h, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("[Request interrupted by user]")}, IDs: id()}, prompt())
			case 1: // the turn ended on the results (a tool ended it, max turns)
				h = append(h, prompt())
			}
			continue
		}
		h = append(h, model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock(words())}, IDs: id()}, prompt())
	}
	return h
}

// loaded joins adjacent user messages as the transcript loader does.
func loaded(msgs []model.Message) []model.Message {
	var out []model.Message
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == model.RoleUser && m.Role == model.RoleUser {
			out[n-1] = join(out[n-1], m)
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkRequest reports what the API would reject in msgs.
func checkRequest(msgs []model.Message) error {
	if len(msgs) == 0 || msgs[0].Role != model.RoleUser {
		return fmt.Errorf("does not start with the user")
	}
	for k, m := range msgs {
		if k > 0 && m.Role == model.RoleAssistant && msgs[k-1].Role == model.RoleAssistant {
			return fmt.Errorf("messages %d and %d are both the assistant's", k-1, k)
		}
		var calls []string
		if m.Role == model.RoleAssistant {
			for _, b := range m.Content {
				if b.Type == model.BlockToolUse {
					calls = append(calls, b.ID)
				}
			}
		}
		answered := map[string]bool{}
		if k+1 < len(msgs) && msgs[k+1].Role == model.RoleUser {
			for _, b := range msgs[k+1].Content {
				if b.Type == model.BlockToolResult {
					answered[b.ToolUseID] = true
				}
			}
		}
		for _, c := range calls {
			if k+1 < len(msgs) && !answered[c] {
				return fmt.Errorf("message %d: call %s has no result after it", k, c)
			}
		}
		if m.Role != model.RoleUser {
			continue
		}
		asked := map[string]bool{}
		if k > 0 {
			for _, b := range msgs[k-1].Content {
				if b.Type == model.BlockToolUse {
					asked[b.ID] = true
				}
			}
		}
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult && !asked[b.ToolUseID] {
				return fmt.Errorf("message %d: result %s answers no call before it", k, b.ToolUseID)
			}
		}
	}
	return nil
}

func texts(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range loaded(msgs) {
		fmt.Fprintf(&b, "%s:", m.Role)
		for _, c := range m.Content {
			t := strings.TrimRight(c.Text, "w")
			fmt.Fprintf(&b, " %s%s%s(%d)", t, c.ToolUseID, c.ID, len(c.Text)+len(c.Content))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCollapseViewRandom folds random conversations as the layer chooses
// to: every view is a valid request, the user's latest prompts are sent,
// and a resumed session — whose loader joins adjacent user lines — sends
// the same conversation as the live one did.
func TestCollapseViewRandom(t *testing.T) {
	w := tokens.Window{Size: 60_000, MaxOutput: 4_000}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		h := randomConversation(r)
		c := NewCollapse(CollapseConfig{SpanTokens: 2_000 + int64(r.IntN(6_000)), KeepRecent: 0.05 + r.Float64()*0.2})
		chosen := c.choose(t.Context(), h, 1<<40, w)
		var spans []transcript.CollapseSpan
		for k, s := range chosen {
			ids := h[s.to].IDs
			spans = append(spans, transcript.CollapseSpan{FromUUID: h[s.from].IDs[0], ToUUID: ids[len(ids)-1], Summary: fmt.Sprintf("S%d", k)})
		}
		live := collapseView(h, spans)
		if err := checkRequest(live); err != nil {
			t.Fatalf("seed %d: the live view is not a valid request: %v", seed, err)
		}
		for i := range typedPrompts(h, c.cfg.KeepPrompts) {
			label := strings.Fields(h[i].Content[0].Text)[0] + " "
			if !strings.Contains(texts(live), label) {
				t.Fatalf("seed %d: %s, one of the latest prompts, was folded", seed, label)
			}
		}
		// A resumed session chooses its next spans on the loaded history:
		// the user's latest prompts stay, joined with results or not.
		lh := loaded(h)
		var again []transcript.CollapseSpan
		for k, s := range c.choose(t.Context(), lh, 1<<40, w) {
			ids := lh[s.to].IDs
			again = append(again, transcript.CollapseSpan{FromUUID: lh[s.from].IDs[0], ToUUID: ids[len(ids)-1], Summary: fmt.Sprintf("R%d", k)})
		}
		view := collapseView(lh, again)
		if err := checkRequest(view); err != nil {
			t.Fatalf("seed %d: the view of the loaded history is not a valid request: %v", seed, err)
		}
		for i := range typedPrompts(h, c.cfg.KeepPrompts) {
			label := strings.Fields(h[i].Content[0].Text)[0] + " "
			if !strings.Contains(texts(view), label) {
				t.Fatalf("seed %d: %s, one of the latest prompts, was folded once the history was loaded", seed, label)
			}
		}
		resumed := collapseView(loaded(h), spans)
		if err := checkRequest(resumed); err != nil {
			t.Fatalf("seed %d: the resumed view is not a valid request: %v", seed, err)
		}
		if diff := cmp.Diff(texts(live), texts(resumed)); diff != "" {
			t.Fatalf("seed %d: the resumed view differs from the live one (-live +resumed):\n%s", seed, diff)
		}
	}
}

// TestCollapseViewAnySpans: whatever spans a transcript records, the view
// is a valid request.
func TestCollapseViewAnySpans(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 11))
		h := randomConversation(r)
		if r.IntN(2) == 0 {
			h = loaded(h)
		}
		var spans []transcript.CollapseSpan
		for k := range 1 + r.IntN(6) {
			i, j := r.IntN(len(h)), r.IntN(len(h))
			from, to := h[i].IDs, h[j].IDs
			spans = append(spans, transcript.CollapseSpan{FromUUID: from[r.IntN(len(from))], ToUUID: to[r.IntN(len(to))], Summary: fmt.Sprintf("S%d", k)})
		}
		if err := checkRequest(collapseView(h, spans)); err != nil {
			t.Fatalf("seed %d: spans %v: %v", seed, spans, err)
		}
	}
}
