package serve

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
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

// TestLineIsAtLineStart: a span whose bytes are the event but do not
// begin a line (here, the tail of a longer line) is refused.
func TestLineIsAtLineStart(t *testing.T) {
	event := `{"type":"user","uuid":"a1","parentUuid":null,"message":{"role":"user","content":"hi"}}`
	data := `{"type":"user","uuid":"z0","message":{"role":"user","content":"x"}}` + "\n" + `{"pad":1}` + event + "\n" + event + "\n"
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	inner := int64(strings.Index(data, event))
	whole := int64(strings.LastIndex(data, event))
	n := int64(len(event))
	for _, c := range []struct {
		sp   span
		want bool
	}{
		{span{whole, n}, true},
		{span{inner, n}, false},
		{span{0, int64(strings.IndexByte(data, '\n'))}, false}, // z0, not a1
	} {
		if got := lineIs(src, c.sp, "a1"); got != c.want {
			t.Errorf("lineIs(%+v) = %v, want %v", c.sp, got, c.want)
		}
	}
}
