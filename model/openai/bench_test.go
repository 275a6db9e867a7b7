package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

// BenchmarkStream measures decoding a 2,000-chunk reply (1,000 text
// pieces, then a tool call in 1,000 argument pieces) over local HTTP.
func BenchmarkStream(b *testing.B) {
	args, _ := json.Marshal(map[string]string{"content": strings.Repeat("x", 3000)})
	reply := openaitest.Reply{
		Text:      strings.Split(strings.Repeat("word ", 1000), " ")[:1000],
		ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "Write", Arguments: openaitest.SplitEvery(string(args), len(args)/1000+1)}},
	}
	srv := openaitest.NewServer(b)
	c := newClient(b, srv, "")
	req := simpleRequest()
	b.ReportAllocs()
	for b.Loop() {
		srv.Push(reply)
		chunks, err := collect(c, b.Context(), req)
		if err != nil {
			b.Fatal(err)
		}
		if last := chunks[len(chunks)-1]; last.Kind != model.ChunkDone {
			b.Fatalf("last chunk %v", last.Kind)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/event")
}
