package serve

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopUUID(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"type":"user","uuid":"a1"}`, "a1"},
		{`{"parentUuid":"p","uuid" : "a1","x":1}`, "a1"},
		{`{"message":{"content":[{"input":{"uuid":"nested"}}]},"uuid":"a1","toolUseResult":{"uuid":"after"}}`, "a1"},
		{`{"text":"say \"uuid\":\"fake\"","uuid":"a1"}`, "a1"},
		{`{"uuid":"a\u0031"}`, "a1"},
		{`{"uuid":"first","uuid":"last"}`, "last"},
		{`{"message":{"uuid":"nested"}}`, ""},
		{`{"uuid":null}`, ""},
		{`{"type":"summary"}`, ""},
		{`{"uuid":"tor`, ""},
		{`{"uuid`, ""},
		{`not json "uuid"`, ""},
	} {
		if got := string(topUUID([]byte(c.line))); got != c.want {
			t.Errorf("topUUID(%s) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestWritePage: a page sent without encoding/json is the JSON it would
// have sent.
func TestWritePage(t *testing.T) {
	for _, p := range []Page{
		{Events: []json.RawMessage{}},
		{Events: []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"a","message":{"content":"<b>&\u2028"}}`), json.RawMessage(" {\"uuid\":\"b\"}\r")}, FirstID: `a"<`, HasMore: true},
	} {
		w := httptest.NewRecorder()
		writePage(w, p)
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantv any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", w.Body.Bytes(), err)
		}
		json.Unmarshal(want, &wantv)
		if diff := cmp.Diff(wantv, got); diff != "" || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("(-encoding/json +writePage):\n%s", diff)
		}
	}
}
