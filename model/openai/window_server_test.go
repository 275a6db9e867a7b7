package openai_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

// TestServerWindowAndCache: a configured fake server charges the prompt
// as it estimates it, reports a prefix it saw before as cached, and
// refuses a prompt that does not fit its window with OpenAI's
// context_length_exceeded error, which the client reads as a prompt too
// long, with both numbers.
func TestServerWindowAndCache(t *testing.T) {
	srv := openaitest.New(openaitest.Config{ContextWindow: 10_000, Respond: func(*openaitest.Request) openaitest.Reply {
		return openaitest.Text("ok")
	}})
	defer srv.Close()
	c := newClient(t, srv, "")
	long := strings.Repeat("a line of the project's log, long enough to count\n", 120) // about 1,500 tokens
	req := simpleRequest()
	req.Messages = []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(long)}}}
	usage := func() model.Usage {
		t.Helper()
		chunks, err := collect(c, t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return chunks[len(chunks)-1].Response.Usage
	}
	first := usage()
	reqs := srv.Requests()
	if got := reqs[0].Tokens; got < 1_400 || first.InputTokens != int64(got) || first.CacheReadInputTokens != 0 {
		t.Errorf("first request: %d tokens estimated, usage %+v: want it all charged as input", got, first)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("ok")}},
		model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("and now?")}})
	second := usage()
	if second.CacheReadInputTokens == 0 || second.CacheReadInputTokens%128 != 0 || second.CacheReadInputTokens > int64(reqs[0].Tokens) {
		t.Errorf("second request: usage %+v: want the first message read from the cache, in steps of 128", second)
	}

	req.MaxTokens = 9_000 // 1,500 of prompt and 9,000 of reply do not fit 10,000
	_, err := collect(c, t.Context(), req)
	var apiErr *model.APIError
	if !errors.Is(err, model.ErrPromptTooLong) || !errors.As(err, &apiErr) || apiErr.Limit != 10_000 || apiErr.Tokens == 0 {
		t.Fatalf("err %v (%+v): want a prompt too long with the window and the size", err, apiErr)
	}
	if last := srv.Requests()[2]; last.Status != 400 || last.Tokens+last.Completion <= 10_000 {
		t.Errorf("refused request recorded as %+v", last)
	}
}
