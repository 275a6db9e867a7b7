package filehistory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/transcript"
)

// chat is a transcript of two turns; the second calls a tool.
var chat = strings.Join([]string{
	`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"first prompt"},"uuid":"p1","timestamp":"2026-01-02T10:00:00.000Z","cwd":"/proj","sessionId":"s"}`,
	`{"parentUuid":"p1","isSidechain":false,"type":"assistant","message":{"id":"r1","role":"assistant","content":[{"type":"text","text":"one"}],"stop_reason":"end_turn"},"uuid":"a1","timestamp":"2026-01-02T10:00:01.000Z","sessionId":"s"}`,
	`{"type":"last-prompt","lastPrompt":"first prompt","leafUuid":"a1","sessionId":"s"}`,
	`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":"second prompt"},"uuid":"p2","timestamp":"2026-01-02T10:01:00.000Z","cwd":"/proj","sessionId":"s"}`,
	`{"parentUuid":"p2","isSidechain":false,"type":"assistant","message":{"id":"r2","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use"},"uuid":"a2","timestamp":"2026-01-02T10:01:01.000Z","sessionId":"s"}`,
	`{"parentUuid":"a2","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]},"uuid":"r2","timestamp":"2026-01-02T10:01:02.000Z","sessionId":"s"}`,
	`{"parentUuid":"r2","isSidechain":false,"type":"assistant","message":{"id":"r3","role":"assistant","content":[{"type":"text","text":"two"}],"stop_reason":"end_turn"},"uuid":"a3","timestamp":"2026-01-02T10:01:03.000Z","sessionId":"s"}`,
	`{"type":"last-prompt","lastPrompt":"second prompt","leafUuid":"a3","sessionId":"s"}`,
}, "\n") + "\n"

func TestConversationPoint(t *testing.T) {
	ctx := context.Background()
	src := transcript.BytesSource([]byte(chat))
	p, err := ConversationPoint(ctx, src, "p2")
	if err != nil {
		t.Fatal(err)
	}
	if p.Leaf != "a1" || p.Prompt != "second prompt" || p.LastPrompt != "first prompt" || p.CWD != "/proj" {
		t.Errorf("point %+v", p)
	}

	// The record makes the next load end where the rewind put it.
	rec, _ := LastPromptRecord(p, "s").MarshalJSON()
	conv, err := transcript.Load(ctx, transcript.BytesSource([]byte(chat+string(rec)+"\n")), transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conv.Leaf != "a1" || len(conv.Entries) != 2 {
		t.Errorf("after the record the conversation ends at %s with %d entries", conv.Leaf, len(conv.Entries))
	}

	for _, tc := range []struct {
		name, id string
		is       error
		say      string
	}{
		{"first message", "p1", ErrFirstMessage, ""},
		{"tool result", "r2", nil, "not a prompt"},
		{"assistant", "a2", nil, "not a prompt"},
		{"unknown", "zz", nil, `no message "zz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConversationPoint(ctx, src, tc.id)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("err %v", err)
			}
		})
	}
}
