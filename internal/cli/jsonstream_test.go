package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// TestJSONStreamIsWriteJSON: the documents `sessions show --json` and
// `sessions export --format json` stream are byte for byte the ones
// writeJSON encoded whole before.
func TestJSONStreamIsWriteJSON(t *testing.T) {
	// Whitespace inside the raw fields, characters encoding/json escapes
	// in HTML mode, a line separator, invalid UTF-8: both encode them alike.
	odd := "{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":\"s\", \"message\": { \"role\" : \"user\", \"content\": \"a <b> & c \u2028 d \xff\" }, \"extra\": [1, 2]}\n" +
		"{\"type\":\"assistant\",\"uuid\":\"a1\",\"parentUuid\":\"u1\",\"sessionId\":\"s\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"<ok>\"},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{ \"command\": \"ls && echo <x>\" }}]}}\n" +
		"{\"type\":\"user\",\"uuid\":\"u2\",\"parentUuid\":\"a1\",\"sessionId\":\"s\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[ {\"type\":\"text\",\"text\":\"&amp;\"} ]}]},\"toolUseResult\":{ \"stdout\": \"<&>\" }}\n"
	for _, file := range []string{
		"../../transcript/testdata/cc-2.1.197-manual-compact.jsonl",
		"odd",
	} {
		data := []byte(odd)
		if file != "odd" {
			var err error
			if data, err = os.ReadFile(file); err != nil {
				t.Fatal(err)
			}
		}
		store := transcript.NewMemStore()
		ap, err := store.OpenAppender(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		var entries []transcript.Entry
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			e, err := transcript.DecodeEntry(line)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		if err := ap.Append(t.Context(), entries, false); err != nil {
			t.Fatal(err)
		}
		ap.Close()
		for _, history := range []bool{false, true} {
			src, err := store.OpenSource(t.Context(), "s")
			if err != nil {
				t.Fatal(err)
			}
			conv, err := transcript.Load(t.Context(), src, transcript.LoadOptions{History: history})
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			msgs := conv.Messages()
			if len(msgs) < 3 {
				t.Fatalf("%s: %d messages", file, len(msgs))
			}
			warnings := append([]string{"a <warning> & more"}, conv.Warnings...)

			var want, got bytes.Buffer
			if err := writeJSON(&want, struct {
				SessionID string          `json:"sessionId"`
				Messages  []model.Message `json:"messages"`
				Warnings  []string        `json:"warnings"`
			}{conv.SessionID, msgs, warnings}); err != nil {
				t.Fatal(err)
			}
			if err := writeViewJSON(&got, conv.SessionID, msgs, warnings); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("%s: show --json streamed differs (-whole +streamed):\n%s", file, diff)
			}

			raw := make([]json.RawMessage, 0, len(conv.Entries))
			for _, e := range conv.Entries {
				b, err := e.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				raw = append(raw, b)
			}
			want.Reset()
			got.Reset()
			if err := writeJSON(&want, struct {
				SessionID string            `json:"sessionId"`
				Entries   []json.RawMessage `json:"entries"`
			}{conv.SessionID, raw}); err != nil {
				t.Fatal(err)
			}
			if err := writeEntriesJSON(&got, conv.SessionID, conv.Entries); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("%s: export json streamed differs (-whole +streamed):\n%s", file, diff)
			}
		}
	}
}
