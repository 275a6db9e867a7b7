package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// TestAfterResponse checks the hook sees each response with the request
// exactly as the model received it and the uuids the response was
// recorded under.
func TestAfterResponse(t *testing.T) {
	type seen struct {
		req  *model.Request
		resp *model.Response
		ids  []string
	}
	var got []seen
	echo := &fakeTool{name: "Echo", run: func(context.Context, json.RawMessage) (tool.Result, error) { return tool.Text("echoed"), nil }}
	m := script(call(use("toolu_1", "Echo", `{}`)), say("done"))
	h := newHarness(t, m, []tool.Tool{echo}, func(c *engine.Config) {
		c.AfterResponse = func(_ context.Context, req *model.Request, resp *model.Response, ids []string) {
			got = append(got, seen{req, resp, ids})
		}
	})
	if _, err := h.run(t, t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("AfterResponse called %d times for 2 responses", len(got))
	}
	var assistants [][]string
	for _, msg := range h.sess.History() {
		if msg.Role == model.RoleAssistant {
			assistants = append(assistants, msg.IDs)
		}
	}
	for i, s := range got {
		if s.req != m.Requests()[i] {
			t.Errorf("response %d: the hook's request is not the one sent", i)
		}
		if diff := cmp.Diff(assistants[i], s.ids); diff != "" || len(s.ids) == 0 {
			t.Errorf("response %d: ids differ from the history's (-history +hook):\n%s", i, diff)
		}
	}
	if n := len(got[1].req.Messages); n != 3 {
		t.Errorf("the second request carried %d messages, want 3 (prompt, call, result)", n)
	}
	if got[1].resp.Content[0].Text != "done" {
		t.Errorf("second response %+v", got[1].resp.Content)
	}
}
