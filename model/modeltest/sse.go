package modeltest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// response writes one successful reply, streamed or whole.
type response struct {
	id, model, requestID string
	reply                Reply
	usage                model.Usage
	cfg                  *Config
	// contextManagement reports the edits applied to the prompt; nil
	// when the request asked for none.
	contextManagement json.RawMessage
}

func (o *response) stopReason() string {
	if o.reply.StopReason != "" {
		return o.reply.StopReason
	}
	for _, b := range o.reply.Content {
		if b.Type == model.BlockToolUse {
			return model.StopToolUse
		}
	}
	return model.StopEndTurn
}

func num(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

func usageJSON(u model.Usage) json.RawMessage {
	var w jsonw.Object
	w.Raw("input_tokens", num(u.InputTokens))
	w.Raw("cache_creation_input_tokens", num(u.CacheCreationInputTokens))
	w.Raw("cache_read_input_tokens", num(u.CacheReadInputTokens))
	w.Raw("output_tokens", num(u.OutputTokens))
	return w.Bytes()
}

// messageJSON is the reply as a non-streaming Messages response.
func (o *response) messageJSON() []byte {
	content, _ := jsonw.Marshal(o.reply.Content)
	if o.reply.Content == nil {
		content = []byte("[]")
	}
	var w jsonw.Object
	w.Str("id", o.id)
	w.Str("type", "message")
	w.Str("role", model.RoleAssistant)
	w.Str("model", o.model)
	w.Raw("content", content)
	w.Str("stop_reason", o.stopReason())
	w.Null("stop_sequence")
	w.Raw("usage", usageJSON(o.usage))
	w.OptRaw("context_management", o.contextManagement)
	return w.Bytes()
}

// emitter writes SSE events and applies the reply's faults, counting
// events as it goes.
type emitter struct {
	w     http.ResponseWriter
	r     *http.Request
	reply *Reply
	reqID string
	n     int
	buf   bytes.Buffer
}

// send writes one event and reports whether to go on.
func (e *emitter) send(event string, data []byte) bool {
	e.buf.Reset()
	e.buf.WriteString("event: ")
	e.buf.WriteString(event)
	e.buf.WriteString("\ndata: ")
	e.buf.Write(data)
	e.buf.WriteString("\n\n")
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return false
	}
	e.w.(http.Flusher).Flush()
	e.n++
	r := e.reply
	switch e.n {
	case r.CutAfter:
		// Abort: the server closes the connection without ending the
		// chunked body, as a dropped connection looks to the client.
		panic(http.ErrAbortHandler)
	case r.EndAfter:
		return false
	case r.ErrorAfter:
		if r.Status != 0 {
			e.send("error", errorBody(e.reqID, *r))
			return false
		}
	}
	if r.Hold != nil && e.n == r.HoldAfter {
		select {
		case <-r.Hold:
		case <-e.r.Context().Done():
			return false
		}
	}
	return e.r.Context().Err() == nil
}

func event(typ string, index int, fields func(w *jsonw.Object)) []byte {
	var w jsonw.Object
	w.Str("type", typ)
	if index >= 0 {
		w.Raw("index", num(int64(index)))
	}
	if fields != nil {
		fields(&w)
	}
	return w.Bytes()
}

func delta(index int, typ, key, value string) []byte {
	return event("content_block_delta", index, func(w *jsonw.Object) {
		var d jsonw.Object
		d.Str("type", typ)
		d.Str(key, value)
		w.Raw("delta", d.Bytes())
	})
}

// stream writes the reply as the API's server-sent events.
func (o *response) stream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("content-type", "text/event-stream; charset=utf-8")
	w.Header().Set("cache-control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &emitter{w: w, r: r, reply: &o.reply, reqID: o.requestID}

	start := o.usage
	start.OutputTokens = 1
	var msg jsonw.Object
	msg.Str("id", o.id)
	msg.Str("type", "message")
	msg.Str("role", model.RoleAssistant)
	msg.Str("model", o.model)
	msg.Raw("content", json.RawMessage("[]"))
	msg.Null("stop_reason")
	msg.Null("stop_sequence")
	msg.Raw("usage", usageJSON(start))
	if !e.send("message_start", event("message_start", -1, func(w *jsonw.Object) { w.Raw("message", msg.Bytes()) })) {
		return
	}
	for i, b := range o.reply.Content {
		if !o.block(e, i, b) {
			return
		}
	}
	md := event("message_delta", -1, func(w *jsonw.Object) {
		var d jsonw.Object
		d.Str("stop_reason", o.stopReason())
		d.Null("stop_sequence")
		w.Raw("delta", d.Bytes())
		w.Raw("usage", usageJSON(o.usage))
		w.OptRaw("context_management", o.contextManagement)
	})
	if !e.send("message_delta", md) {
		return
	}
	e.send("message_stop", event("message_stop", -1, nil))
}

// block streams one content block: start, a ping after the first start,
// deltas, stop.
func (o *response) block(e *emitter, i int, b model.Block) bool {
	var start []byte
	var deltas [][]byte
	switch b.Type {
	case model.BlockText:
		start = []byte(`{"type":"text","text":""}`)
		for _, s := range split(b.Text, o.deltaBytes()) {
			deltas = append(deltas, delta(i, "text_delta", "text", s))
		}
		var cites []json.RawMessage
		_ = json.Unmarshal(b.Extra["citations"], &cites)
		for _, c := range cites {
			deltas = append(deltas, event("content_block_delta", i, func(w *jsonw.Object) {
				var d jsonw.Object
				d.Str("type", "citations_delta")
				d.Raw("citation", c)
				w.Raw("delta", d.Bytes())
			}))
		}
	case model.BlockThinking:
		start = []byte(`{"type":"thinking","thinking":"","signature":""}`)
		for _, s := range split(b.Thinking, o.deltaBytes()) {
			deltas = append(deltas, delta(i, "thinking_delta", "thinking", s))
		}
		var sig string
		_ = json.Unmarshal(b.Extra["signature"], &sig)
		if sig != "" {
			deltas = append(deltas, delta(i, "signature_delta", "signature", sig))
		}
	case model.BlockToolUse:
		var s jsonw.Object
		s.Str("type", model.BlockToolUse)
		s.Str("id", b.ID)
		s.Str("name", b.Name)
		s.Raw("input", json.RawMessage("{}"))
		start = s.Bytes()
		var input bytes.Buffer
		if len(b.Input) > 0 && json.Compact(&input, b.Input) != nil {
			input.Reset()
			input.Write(b.Input) // sent as scripted, to test bad input
		}
		deltas = append(deltas, delta(i, "input_json_delta", "partial_json", ""))
		n := o.cfg.InputPieces
		if n <= 0 {
			n = 3
		}
		for _, s := range split(input.String(), (input.Len()+n-1)/n) {
			deltas = append(deltas, delta(i, "input_json_delta", "partial_json", s))
		}
	default:
		start, _ = b.MarshalJSON()
	}
	if !e.send("content_block_start", event("content_block_start", i, func(w *jsonw.Object) { w.Raw("content_block", start) })) {
		return false
	}
	if i == 0 && !e.send("ping", []byte(`{"type": "ping"}`)) {
		return false
	}
	for _, d := range deltas {
		if !e.send("content_block_delta", d) {
			return false
		}
	}
	return e.send("content_block_stop", event("content_block_stop", i, nil))
}

func (o *response) deltaBytes() int {
	if o.cfg.DeltaBytes > 0 {
		return o.cfg.DeltaBytes
	}
	return 16
}

// split cuts s into pieces of about n bytes, never inside a UTF-8
// sequence.
func split(s string, n int) []string {
	if n <= 0 {
		n = 1
	}
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
