package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/cairn-dev/cairn/model"
)

func TestParsePromptTooLong(t *testing.T) {
	tests := []struct {
		msg           string
		tokens, limit int
	}{
		{"prompt is too long: 210000 tokens > 200000 maximum", 210000, 200000},
		{"Prompt is too long: 5 tokens > 4 maximum.", 5, 4},
		{"input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000", 0, 0},
		{"prompt is too long", 0, 0},
		{"prompt is too long: many tokens > 3 maximum", 0, 0},
		{"", 0, 0},
	}
	for _, tt := range tests {
		tokens, limit := parsePromptTooLong(tt.msg)
		if tokens != tt.tokens || limit != tt.limit {
			t.Errorf("parsePromptTooLong(%q) = %d, %d; want %d, %d", tt.msg, tokens, limit, tt.tokens, tt.limit)
		}
	}
}

func FuzzParsePromptTooLong(f *testing.F) {
	f.Add("prompt is too long: 210000 tokens > 200000 maximum")
	f.Add("prompt is too long: -1 tokens > 99999999999999999999 maximum")
	f.Fuzz(func(t *testing.T, msg string) {
		tokens, limit := parsePromptTooLong(msg)
		if tokens < 0 || limit < 0 {
			t.Errorf("negative sizes %d, %d from %q", tokens, limit, msg)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"retry-after": "3"}, 3 * time.Second},
		{map[string]string{"retry-after": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "1500", "retry-after": "9"}, 1500 * time.Millisecond},
		{map[string]string{"retry-after": "Thu, 01 Jan 2026 12:00:10 GMT"}, 10 * time.Second},
		{map[string]string{"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, 0},
		{map[string]string{"retry-after": "-4"}, 0},
		{map[string]string{"retry-after": "NaN"}, 0},
		{map[string]string{"retry-after": "1e300"}, maxRetryAfter},
		{map[string]string{"retry-after": "soon"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("3", "")
	f.Add("", "250.5")
	f.Add("Thu, 01 Jan 2026 12:00:10 GMT", "")
	f.Fuzz(func(t *testing.T, after, afterMS string) {
		h := http.Header{}
		h.Set("retry-after", after)
		h.Set("retry-after-ms", afterMS)
		if d := retryAfter(h, time.Unix(0, 0)); d < 0 || d > maxRetryAfter {
			t.Errorf("retryAfter(%q, %q) = %v", after, afterMS, d)
		}
	})
}

// FuzzAssembler feeds event lines, as the SDK decodes them, to the
// assembler: it must never panic, and a completed response must agree with
// the chunks that built it.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte(`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":3}}}
{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}
{"type":"content_block_stop","index":0}
{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}
{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}
{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}
{"type":"content_block_stop","index":1}
{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}
{"type":"message_stop"}`))
	f.Add([]byte(`{"type":"message_start","message":{}}
{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}
{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}
{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}
{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}
{"type":"content_block_stop","index":0}
{"type":"message_stop"}`))
	f.Add([]byte(`{"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a assembler
		text := map[int]string{}
		var done *model.Response
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			var ev sdk.BetaRawMessageStreamEventUnion
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			stop, err := a.handle(&ev, func(ch model.Chunk) bool {
				switch ch.Kind {
				case model.ChunkBlockStart:
					text[ch.Index] = ch.Block.Text
				case model.ChunkTextDelta:
					text[ch.Index] += ch.Text
				case model.ChunkDone:
					done = ch.Response
				}
				return true
			})
			if err != nil || stop {
				break
			}
		}
		if done == nil {
			return
		}
		for i, b := range done.Content {
			if b.Type == model.BlockText && b.Text != text[i] {
				t.Errorf("block %d: text %q, start and deltas %q", i, b.Text, text[i])
			}
			if _, err := b.MarshalJSON(); err != nil {
				t.Errorf("block %d does not encode: %v", i, err)
			}
			if b.Input != nil && !json.Valid(b.Input) {
				t.Errorf("block %d: invalid input %s", i, b.Input)
			}
		}
		_ = fmt.Sprint(done)
	})
}
