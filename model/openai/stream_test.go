package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	sdk "github.com/openai/openai-go/v3"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want model.Usage
	}{
		{"plain", `{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}`,
			model.Usage{InputTokens: 100, OutputTokens: 7}},
		{"cached", `{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}`,
			model.Usage{InputTokens: 36, OutputTokens: 7, CacheReadInputTokens: 64}},
		{"cached and written", `{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":10,"cache_write_tokens":80}}`,
			model.Usage{InputTokens: 10, OutputTokens: 7, CacheReadInputTokens: 10, CacheCreationInputTokens: 80}},
		{"inconsistent counts stay non-negative", `{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}`,
			model.Usage{InputTokens: 0, OutputTokens: 1, CacheReadInputTokens: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u sdk.CompletionUsage
			if err := json.Unmarshal([]byte(tt.raw), &u); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, usage(u)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzAssembler feeds arbitrary chunk payloads, one per line, to the
// assembler and checks the promises of model.Model: blocks start, get
// deltas and stop in order, every tool_use input is valid JSON, and Done
// carries exactly the stopped blocks.
func FuzzAssembler(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}
{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{\"a\""}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"g"}}]}}]}
{"choices":[{"index":0,"delta":{"content":"after"},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3}}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"p"},{"index":2,"id":"q","function":{"arguments":"[1"}},{"index":0}]}}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payloads string) {
		n := 0
		a := newAssembler("m", func() string { n++; return "gen" })
		var out []model.Chunk
		for line := range strings.SplitSeq(payloads, "\n") {
			var c sdk.ChatCompletionChunk
			if json.Unmarshal([]byte(line), &c) != nil {
				continue
			}
			err := a.add(c)
			out = append(out, a.out...)
			a.out = a.out[:0]
			if err != nil {
				return
			}
		}
		if a.finish() != nil {
			return
		}
		out = append(out, a.out...)
		if len(out) < 2 || out[0].Kind != model.ChunkMessageStart || out[len(out)-1].Kind != model.ChunkDone {
			t.Fatalf("sequence does not run from MessageStart to Done: %+v", out)
		}
		var stopped []model.Block
		open := -1
		for _, c := range out[1 : len(out)-1] {
			switch c.Kind {
			case model.ChunkBlockStart:
				if open >= 0 || c.Index != len(stopped) {
					t.Fatalf("block %d starts with block %d open, after %d stopped", c.Index, open, len(stopped))
				}
				open = c.Index
			case model.ChunkTextDelta, model.ChunkInputDelta:
				if c.Index != open {
					t.Fatalf("delta for block %d with block %d open", c.Index, open)
				}
			case model.ChunkBlockStop:
				if c.Index != open {
					t.Fatalf("block %d stops with block %d open", c.Index, open)
				}
				if c.Block.Type == model.BlockToolUse && !json.Valid(c.Block.Input) {
					t.Fatalf("tool_use input %q is not JSON", c.Block.Input)
				}
				stopped = append(stopped, *c.Block)
				open = -1
			default:
				t.Fatalf("chunk kind %d inside the message", c.Kind)
			}
		}
		if open >= 0 {
			t.Fatalf("block %d never stopped", open)
		}
		if diff := cmp.Diff(stopped, out[len(out)-1].Response.Content); diff != "" {
			t.Fatalf("Done content differs from the stopped blocks:\n%s", diff)
		}
	})
}
