package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

var (
	todoA = Todo{Content: "Write the parser", Status: TodoCompleted, ActiveForm: "Writing the parser"}
	todoB = Todo{Content: "Test the parser", Status: TodoInProgress, ActiveForm: "Testing the parser"}
	todoC = Todo{Content: "Document it", Status: TodoPending, ActiveForm: "Documenting it"}
)

func TestTodoWrite(t *testing.T) {
	list := NewTodoList([]Todo{todoC})
	w := TodoWrite{List: list}
	env := newEnv(t)

	r := call(t, w, env, map[string]any{"todos": []Todo{todoA, todoB, todoC}})
	if r.IsError || text(t, r) != todoWritten {
		t.Fatalf("got %q (error %v)", text(t, r), r.IsError)
	}
	want := map[string]any{
		"oldTodos": []any{map[string]any{"content": "Document it", "status": "pending", "activeForm": "Documenting it"}},
		"newTodos": []any{
			map[string]any{"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
			map[string]any{"content": "Test the parser", "status": "in_progress", "activeForm": "Testing the parser"},
			map[string]any{"content": "Document it", "status": "pending", "activeForm": "Documenting it"},
		},
	}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Todo{todoA, todoB, todoC}, list.Todos()); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	// All done: the list empties, and the result still shows what was sent.
	done := []Todo{todoA, {Content: "Test the parser", Status: TodoCompleted, ActiveForm: "Testing the parser"}}
	r = call(t, w, env, map[string]any{"todos": done})
	if diff := cmp.Diff(todoWriteDetail{OldTodos: []Todo{todoA, todoB, todoC}, NewTodos: done}, r.Detail); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if got := list.Todos(); len(got) != 0 {
		t.Errorf("a finished list is kept: %v", got)
	}
	// An empty list is a list; oldTodos is [] rather than null.
	r = call(t, w, env, `{"todos":[]}`)
	if diff := cmp.Diff(map[string]any{"oldTodos": []any{}, "newTodos": []any{}}, detail(t, r)); r.IsError || diff != "" {
		t.Errorf("empty list: %q, detail (-want +got):\n%s", text(t, r), diff)
	}
	// Todos sent as a JSON string are accepted.
	r = call(t, w, env, map[string]any{"todos": `[{"content":"x","status":"pending","activeForm":"xing"}]`})
	if r.IsError || len(list.Todos()) != 1 {
		t.Errorf("todos as a string: %q, list %v", text(t, r), list.Todos())
	}
}

func TestTodoWriteRefused(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"two in progress", `{"todos":[{"content":"a","status":"in_progress","activeForm":"A"},{"content":"b","status":"in_progress","activeForm":"B"}]}`, "2 todos are in_progress; at most one may be"},
		{"empty content", `{"todos":[{"content":"  ","status":"pending","activeForm":"A"}]}`, `todos[0]: "content" is empty`},
		{"empty activeForm", `{"todos":[{"content":"a","status":"pending","activeForm":""}]}`, `todos[0]: "activeForm" is empty`},
		{"missing activeForm", `{"todos":[{"content":"a","status":"pending"}]}`, `todos[0]: the required parameter "activeForm" is missing`},
		{"bad status", `{"todos":[{"content":"a","status":"pending","activeForm":"A"},{"content":"b","status":"done","activeForm":"B"}]}`, `todos[1]: "status" must be "pending", "in_progress" or "completed", got "done"`},
		{"unknown field", `{"todos":[{"content":"a","status":"pending","activeForm":"A","priority":"high"}]}`, `todos[0]: unknown parameter "priority"; each todo takes content, status, activeForm`},
		{"item not an object", `{"todos":["a"]}`, `todos[0]:`},
		{"todos not an array", `{"todos":{"content":"a"}}`, `parameter "todos" must be an array`},
		{"todos missing", `{}`, `the required parameter "todos" is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := NewTodoList([]Todo{todoC})
			r := call(t, TodoWrite{List: list}, newEnv(t), tt.input)
			if !r.IsError || !strings.Contains(text(t, r), tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", text(t, r), r.IsError, tt.want)
			}
			if diff := cmp.Diff([]Todo{todoC}, list.Todos()); diff != "" {
				t.Errorf("a refused call changed the list (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTodoWriteWithoutList(t *testing.T) {
	_, err := TodoWrite{}.Run(context.Background(), newEnv(t), json.RawMessage(`{"todos":[]}`))
	if err == nil {
		t.Error("a TodoWrite without a list ran")
	}
}

func TestTodoWriteSafety(t *testing.T) {
	in := json.RawMessage(`{"todos":[]}`)
	w := TodoWrite{}
	if !w.ReadOnly(in) || w.Destructive(in) || w.ConcurrencySafe(in) {
		t.Error("TodoWrite must be read-only, not destructive and not concurrency-safe")
	}
}

func TestTodoListConcurrent(t *testing.T) {
	list := &TodoList{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				list.replace([]Todo{{Content: fmt.Sprint(i, j), Status: TodoPending, ActiveForm: "x"}})
				_ = list.Todos()
				_ = list.Survivors(context.Background())
			}
		})
	}
	wg.Wait()
	if got := list.Todos(); len(got) != 1 {
		t.Errorf("list = %v", got)
	}
}

func TestTodoSurvivors(t *testing.T) {
	if got := NewTodoList(nil).Survivors(context.Background()); got != nil {
		t.Errorf("an empty list survives as %v", got)
	}
	list := NewTodoList([]Todo{todoA, todoB})
	atts := list.Survivors(context.Background())
	if len(atts) != 1 || atts[0].Type != "todo" {
		t.Fatalf("survivors = %+v", atts)
	}
	a := atts[0]
	if diff := cmp.Diff(map[string]any{"content": []Todo{todoA, todoB}, "itemCount": 2, "context": "post-compact"}, a.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	verbatim := `[{"content":"Write the parser","status":"completed","activeForm":"Writing the parser"},{"content":"Test the parser","status":"in_progress","activeForm":"Testing the parser"}]`
	if len(a.Rendered) != 1 || !strings.HasPrefix(a.Rendered[0].Text, "<system-reminder>\n") || !strings.HasSuffix(a.Rendered[0].Text, verbatim+"\n</system-reminder>") {
		t.Errorf("rendered = %+v", a.Rendered)
	}
	// The recorded attachment restores the list.
	e := recorded(t, a)
	if diff := cmp.Diff([]Todo{todoA, todoB}, LatestTodos([]*transcript.Entry{&e})); diff != "" {
		t.Errorf("restored (-want +got):\n%s", diff)
	}
}

// Transcript lines for TestLatestTodos.
func todoCall(id, todos string) string {
	return `{"type":"assistant","uuid":"a-` + id + `","message":{"role":"assistant","content":[{"type":"text","text":"Planning."},{"type":"tool_use","id":"` + id + `","name":"TodoWrite","input":{"todos":` + todos + `}}]}}`
}

func todoResult(id string, isError bool) string {
	return fmt.Sprintf(`{"type":"user","uuid":"r-%s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok","is_error":%v}]}}`, id, id, isError)
}

func todoAttachment(todos string) string {
	return `{"type":"attachment","uuid":"att","attachment":{"type":"todo","content":` + todos + `,"itemCount":1,"context":"post-compact"}}`
}

func TestLatestTodos(t *testing.T) {
	const (
		listA = `[{"content":"a","status":"in_progress","activeForm":"doing a"}]`
		listB = `[{"content":"b","status":"pending","activeForm":"doing b"}]`
	)
	a := []Todo{{Content: "a", Status: TodoInProgress, ActiveForm: "doing a"}}
	b := []Todo{{Content: "b", Status: TodoPending, ActiveForm: "doing b"}}
	tests := []struct {
		name  string
		lines []string
		want  []Todo
	}{
		{"none", []string{`{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}`}, nil},
		{"one call", []string{todoCall("t1", listA), todoResult("t1", false)}, a},
		{"the newest call", []string{todoCall("t1", listA), todoResult("t1", false), todoCall("t2", listB), todoResult("t2", false)}, b},
		{"a failed call is passed over", []string{todoCall("t1", listA), todoResult("t1", false), todoCall("t2", listB), todoResult("t2", true)}, a},
		{"a call cut off before its result counts", []string{todoCall("t1", listA), todoResult("t1", false), todoCall("t2", listB)}, b},
		{"an input that is not a list is passed over", []string{todoCall("t1", listA), todoResult("t1", false), todoCall("t2", `"soon"`), todoResult("t2", false)}, a},
		{"the attachment after a compaction", []string{todoCall("t1", listA), todoAttachment(listB)}, b},
		{"a call after the attachment", []string{todoAttachment(listB), todoCall("t1", listA), todoResult("t1", false)}, a},
		{"other attachments are not todos", []string{todoCall("t1", listA), `{"type":"attachment","uuid":"x","attachment":{"type":"task_reminder","content":[],"itemCount":0}}`}, a},
		{"an older Claude Code's items", []string{todoCall("t1", `[{"content":"old","status":"pending","priority":"high","id":"1"}]`), todoResult("t1", false)}, []Todo{{Content: "old", Status: TodoPending}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []*transcript.Entry
			for _, l := range tt.lines {
				e, err := transcript.DecodeEntry([]byte(l))
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				entries = append(entries, &e)
			}
			if diff := cmp.Diff(tt.want, LatestTodos(entries)); diff != "" {
				t.Errorf("LatestTodos (-want +got):\n%s", diff)
			}
		})
	}
	// A restored list that was all done is empty.
	done := []Todo{{Content: "a", Status: TodoCompleted, ActiveForm: "doing a"}}
	if got := NewTodoList(done).Todos(); len(got) != 0 {
		t.Errorf("a finished list restored as %v", got)
	}
}

// recorded returns the transcript line recording a, as read back.
func recorded(t *testing.T, a engine.Attachment) transcript.Entry {
	t.Helper()
	att, extra := transcript.EncodeAttachment(a.Type, a.Data, a.Rendered)
	line, err := json.Marshal(transcript.Entry{Type: transcript.TypeAttachment, UUID: "u1", Attachment: att, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	e, err := transcript.DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The attachment renders for the model as recorded, without the session.
func TestTodoAttachmentRenders(t *testing.T) {
	a := NewTodoList([]Todo{todoB}).Survivors(context.Background())[0]
	conv := transcript.Conversation{Entries: []*transcript.Entry{ptr(recorded(t, a))}}
	msgs := conv.Messages()
	if len(msgs) != 1 || msgs[0].Role != model.RoleUser || !strings.Contains(msgs[0].Content[0].Text, `"Test the parser"`) {
		t.Errorf("messages = %+v", msgs)
	}
}

func FuzzTodoWrite(f *testing.F) {
	for _, s := range []string{
		`{"todos":[{"content":"a","status":"in_progress","activeForm":"A"}]}`,
		`{"todos":"[{\"content\":\"a\",\"status\":\"pending\",\"activeForm\":\"A\"}]"}`,
		`{"todos":[{"content":"a","status":"done"}]}`, `{"todos":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		list := NewTodoList(nil)
		r, err := TodoWrite{List: list}.Run(context.Background(), nil, input)
		if err != nil {
			t.Fatal(err)
		}
		got := list.Todos()
		if r.IsError && len(got) != 0 {
			t.Fatalf("a refused call set %v", got)
		}
		if countStatus(got, TodoInProgress) > 1 {
			t.Fatalf("accepted %v", got)
		}
		for _, td := range got {
			if strings.TrimSpace(td.Content) == "" || strings.TrimSpace(td.ActiveForm) == "" || !validStatus(td.Status) {
				t.Fatalf("accepted %+v", td)
			}
		}
		// What was accepted restores from the call.
		if !r.IsError && len(got) > 0 {
			line := todoCall("t1", string(mustJSON(t, got)))
			e, err := transcript.DecodeEntry([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, LatestTodos([]*transcript.Entry{&e})); diff != "" {
				t.Fatalf("restored (-want +got):\n%s", diff)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
