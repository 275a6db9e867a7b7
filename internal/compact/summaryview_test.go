package compact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
)

// viewHistory is a history with every kind of block a summary reads
// differently: images and documents, a result holding an image, texts
// over the length trim keeps, thinking, and more tool results than trim
// leaves whole.
func viewHistory() []model.Message {
	long := strings.Repeat("0123456789", 2_500) // 25,000 bytes
	image := model.Block{Type: model.BlockImage, Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64","media_type":"image/png","data":"AAAA"}`)}}
	doc := model.Block{Type: model.BlockDocument, Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"text","data":"d"}`)}}
	withImage := model.Block{Type: model.BlockToolResult, ToolUseID: "t2", Content: json.RawMessage(`[{"type":"text","text":"a screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`)}
	call := func(id string) model.Block {
		return model.Block{Type: model.BlockToolUse, ID: id, Name: "Read", Input: json.RawMessage(`{"file_path":"/a.go"}`)}
	}
	return []model.Message{
		msg("user", []string{"u1"}, model.TextBlock("look at this"), image, doc),
		msg("assistant", nil, model.Block{Type: model.BlockThinking, Thinking: "hmm"}, model.TextBlock(long), call("t1")),
		msg("user", []string{"u2"}, model.ToolResultBlock("t1", "first result", false)),
		msg("assistant", nil, call("t2")),
		msg("user", []string{"u3"}, withImage),
		msg("assistant", nil, call("t3"), call("t4")),
		msg("user", []string{"u4"}, model.ToolResultBlock("t3", "third "+long, true), model.ToolResultBlock("t4", "fourth", false), model.TextBlock("and then")),
		msg("assistant", nil, call("t5")),
		msg("user", []string{"u5"}, model.ToolResultBlock("t5", "fifth", false)),
		{Role: "assistant"}, // no content at all
	}
}

// TestSummaryViewReadsAsTheCopies: the view a summary reads block by
// block says what the copies it replaces said — trim(withoutImages(h))
// for the messages sent, render of them for the parts — and weighs them
// as EstimateFloor does (the content and each block's framing), at every
// budget.
func TestSummaryViewReadsAsTheCopies(t *testing.T) {
	h := viewHistory()
	orig := slices.Clone(h)
	whole := summaryView{msgs: h}
	trimmed := whole.trimmed()
	stripped := withoutImages(h)
	if diff := cmp.Diff(trim(stripped), trimmed.messages()); diff != "" {
		t.Errorf("trimmed view (-trim(withoutImages) +view):\n%s", diff)
	}
	if diff := cmp.Diff(stripped, whole.messages()); diff != "" {
		t.Errorf("whole view (-withoutImages +view):\n%s", diff)
	}
	if diff := cmp.Diff(render(trim(stripped)), slices.Collect(trimmed.lines())); diff != "" {
		t.Errorf("lines (-render +view):\n%s", diff)
	}
	for _, v := range []summaryView{whole, trimmed} {
		n := tokens.EstimateFloor(v.messages())
		for _, budget := range []int64{1, 10, n / 2, n, n + 1, 10 * n} {
			if got, want := v.fits(budget), n < budget; got != want {
				t.Errorf("trim %v: fits(%d) = %v, the copy weighs %d", v.trim, budget, got, n)
			}
		}
	}
	if diff := cmp.Diff(orig, h); diff != "" {
		t.Errorf("the history changed (-before +after):\n%s", diff)
	}
	// What the parts say, in words.
	want := []string{
		"User: look at this", "User: [image]", "User: [document]",
		"Assistant: " + shorten(strings.Repeat("0123456789", 2_500), 20_000),
		`Assistant called Read with {"file_path":"/a.go"}`,
		"Result: " + clearedText,
		`Assistant called Read with {"file_path":"/a.go"}`,
		"Result: " + clearedText,
		`Assistant called Read with {"file_path":"/a.go"}`, `Assistant called Read with {"file_path":"/a.go"}`,
		"Result: " + shorten("third "+strings.Repeat("0123456789", 2_500), 20_000),
		"Result: fourth", "User: and then",
		`Assistant called Read with {"file_path":"/a.go"}`,
		"Result: fifth",
	}
	if diff := cmp.Diff(want, slices.Collect(trimmed.lines())); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	// The untrimmed view keeps the results, the image's as its text.
	if got := whole.block(h[4], 4, 0).ResultText(); got != "a screenshot\n[image]" {
		t.Errorf("a result holding an image reads %q", got)
	}
}

// TestSummaryViewKeepsTheNewestResults: the newest keepResults results
// are kept wherever they fall in their messages.
func TestSummaryViewKeepsTheNewestResults(t *testing.T) {
	for _, perMsg := range []int{1, 2, 3, 4} {
		var h []model.Message
		id := 0
		for range 3 {
			var blocks []model.Block
			for range perMsg {
				blocks = append(blocks, model.ToolResultBlock(fmt.Sprint(id), "result", false))
				id++
			}
			h = append(h, msg("user", nil, blocks...), msg("assistant", nil, model.TextBlock("ok")))
		}
		var kept []string
		v := summaryView{msgs: h}
		for _, m := range v.trimmed().messages() {
			for _, b := range m.Content {
				if b.Type == model.BlockToolResult && b.ResultText() != clearedText {
					kept = append(kept, b.ToolUseID)
				}
			}
		}
		var want []string
		for i := id - keepResults; i < id; i++ {
			want = append(want, fmt.Sprint(i))
		}
		if diff := cmp.Diff(want, kept); diff != "" {
			t.Errorf("%d results a message: kept (-want +got):\n%s", perMsg, diff)
		}
	}
}
