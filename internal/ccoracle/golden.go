package ccoracle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/cairn-dev/cairn/model"
)

// Goldens: the oracle's recorded files are kept in the repository so the
// loader is tested against real Claude Code files without the binary. They
// are redacted first: Claude Code's own texts (its system prompt, tool
// descriptions, reminders) are not ours to copy. Each is replaced by a
// placeholder naming its hash and size, in the transcript and in the
// expected view alike, so two texts still compare equal exactly when they
// were equal, and a loader that renders a reminder from the transcript
// renders the same placeholder.

var reminderSpan = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// ownTexts begin texts that are Claude Code's whole: a compaction
// summary's wrapping, a local command's caveat.
var ownTexts = []string{"This session is being continued from a previous conversation", "<local-command-caveat>"}

// RedactText replaces each system reminder in s by a placeholder, and the
// whole of s when it is one of Claude Code's own texts (ownTexts).
func RedactText(s string) string {
	for _, p := range ownTexts {
		if strings.HasPrefix(s, p) {
			// A newline at a seam is the joining's, not the text's.
			body := strings.TrimRight(s, "\n")
			return placeholder(body) + s[len(body):]
		}
	}
	return reminderSpan.ReplaceAllStringFunc(s, func(span string) string {
		if strings.HasPrefix(span, "<system-reminder>"+placeholderPrefix) {
			return span // redacted already: redacting is idempotent
		}
		return "<system-reminder>" + placeholder(span) + "</system-reminder>"
	})
}

const placeholderPrefix = "[Claude Code text, sha256:"

func placeholder(s string) string {
	if strings.HasPrefix(s, placeholderPrefix) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s%s, %d bytes]", placeholderPrefix, hex.EncodeToString(sum[:6]), len(s))
}

// RedactMessages redacts the texts of msgs (text blocks and the text of
// tool results).
func RedactMessages(msgs []model.Message) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		m.Content = redactBlocks(m.Content)
		out[i] = m
	}
	return out
}

func redactBlocks(blocks []model.Block) []model.Block {
	out := make([]model.Block, len(blocks))
	for i, b := range blocks {
		switch b.Type {
		case model.BlockText:
			b.Text = RedactText(b.Text)
		case model.BlockToolResult:
			if inner, err := model.DecodeContent(b.Content); err == nil && len(b.Content) > 0 {
				if raw, err := json.Marshal(redactBlocks(inner)); err == nil {
					b.Content = raw
				}
			}
		}
		out[i] = b
	}
	return out
}

// recordTypes are the line types whose whole content is Claude Code's own
// (the requests it logged); only their type and session survive.
var recordTypes = map[string]bool{"api-request": true, "api-request-shape": true, "api-request-blob": true}

// recordAttachments are attachment kinds that hold Claude Code's prompt
// texts and are never sent: their payload is replaced.
var recordAttachments = map[string]bool{"prompt_snapshot": true}

// RedactTranscript redacts a transcript line by line: every string loses
// its system reminders; logged requests and prompt snapshots keep only
// their shape; long strings in the payload of an attachment that records
// what it sent (rendered) are replaced, since the view uses what was sent.
// Lines that are not JSON objects are kept as they are; keys keep their
// order.
func RedactTranscript(data []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(data) {
		trimmed := bytes.TrimRight(line, "\n")
		v, err := decodeOrdered(trimmed)
		obj, ok := v.(*object)
		if err != nil || !ok {
			out.Write(line)
			continue
		}
		typ, _ := obj.get("type").(string)
		if recordTypes[typ] {
			obj = &object{}
			obj.set("type", typ)
			sid, _ := decodeOrdered(mustGet(trimmed, "sessionId"))
			obj.set("sessionId", sid)
			obj.set("redacted", "Claude Code's logged request")
		}
		if att, ok := obj.get("attachment").(*object); ok {
			kind, _ := att.get("type").(string)
			switch {
			case recordAttachments[kind]:
				repl := &object{}
				repl.set("type", kind)
				repl.set("redacted", "Claude Code's prompt")
				obj.set("attachment", repl)
			case obj.get("rendered") != nil:
				obj.set("attachment", redactLong(att))
			}
		}
		var enc bytes.Buffer
		writeOrdered(&enc, redactStrings(obj))
		out.Write(enc.Bytes())
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func mustGet(line []byte, key string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m[key] == nil {
		return []byte("null")
	}
	return m[key]
}

// object is a JSON object that keeps its keys in order, so a redacted
// line differs from the recorded one only where it was redacted.
type object struct {
	keys []string
	vals []any
}

func (o *object) get(k string) any {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i]
		}
	}
	return nil
}

func (o *object) set(k string, v any) {
	for i, key := range o.keys {
		if key == k {
			o.vals[i] = v
			return
		}
	}
	o.keys, o.vals = append(o.keys, k), append(o.vals, v)
}

// decodeOrdered decodes JSON into *object, []any, string, json.Number,
// bool and nil.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep large integers (sentAtMs) exact
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.keys, o.vals = append(o.keys, k), append(o.vals, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func writeOrdered(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeOrdered(b, v.vals[i])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, x)
		}
		b.WriteByte(']')
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	default:
		b.WriteString("null")
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	b.Truncate(b.Len() - 1)
}

// bulkBytes is the size from which a string in a golden transcript is
// replaced whole: the test's own bulk data (big files read before a
// compaction), which no view holds, would only weigh on the repository.
const bulkBytes = 16 << 10

func redactStrings(v any) any {
	switch v := v.(type) {
	case string:
		if len(v) >= bulkBytes {
			return placeholder(v)
		}
		return RedactText(v)
	case *object:
		for i, x := range v.vals {
			v.vals[i] = redactStrings(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = redactStrings(x)
		}
		return v
	}
	return v
}

// redactLong replaces strings of 80 bytes or more.
func redactLong(v any) any {
	switch v := v.(type) {
	case string:
		if len(v) >= 80 {
			return placeholder(v)
		}
		return v
	case *object:
		for i, x := range v.vals {
			v.vals[i] = redactLong(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = redactLong(x)
		}
		return v
	}
	return v
}
