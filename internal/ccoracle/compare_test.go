package ccoracle

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
)

func user(texts ...string) model.Message {
	m := model.Message{Role: model.RoleUser}
	for _, t := range texts {
		m.Content = append(m.Content, model.TextBlock(t))
	}
	return m
}

func assistant(text string) model.Message {
	return model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock(text)}}
}

// TestBefore: the conversation a resume carried is what precedes its
// prompt, less the resume's own attachments, with the seam newline of the
// new turn taken off.
func TestBefore(t *testing.T) {
	msgs := []model.Message{
		user("hi"), assistant("hello"),
		user("old trailing\n", "<system-reminder>new env</system-reminder>\n", "PROBE"),
	}
	got, err := Before(msgs, "PROBE", []string{"<system-reminder>new env</system-reminder>"})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Message{user("hi"), assistant("hello"), user("old trailing")}
	if d := cmp.Diff(Render(want), Render(got)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := Before(msgs, "MISSING", nil); err == nil {
		t.Error("a prompt that was not sent is not an error")
	}
}

// TestNormalizeAndCarries: breakpoints and message splits do not count;
// a lost block does.
func TestNormalizeAndCarries(t *testing.T) {
	cached := model.TextBlock("hi")
	cached.Extra = map[string]json.RawMessage{"cache_control": json.RawMessage(`{"type":"ephemeral"}`)}
	a := []model.Message{{Role: model.RoleUser, Content: []model.Block{cached}}, user("more"), assistant("hello")}
	b := []model.Message{user("hi", "more"), assistant("hello")}
	if d := cmp.Diff(Render(Normalize(b)), Render(Normalize(a))); d != "" {
		t.Errorf("normalised (-want +got):\n%s", d)
	}
	have := []model.Message{user("<system-reminder>x</system-reminder>\n", "hi", "more"), assistant("hello"), user("next")}
	if miss := Carries(have, b); miss != "" {
		t.Errorf("Carries lost %q", miss)
	}
	if miss := Carries(have, append(b, assistant("never sent"))); miss != "assistant text: never sent" {
		t.Errorf("Carries = %q; want the lost reply named", miss)
	}
}
