package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript"
)

// benchReply is a typical step: some text, then a tool call.
var benchReply = modeltest.Reply{Content: []model.Block{
	model.TextBlock(strings.Repeat("I will look at the failing test first. ", 50)), // ~2 KB, 122 deltas
	modeltest.ToolUse("toolu_bench", "Read", `{"file_path":"/src/cairn/model/anthropic/anthropic.go","offset":1,"limit":200}`),
}}

// BenchmarkStream measures one streamed response through the provider over
// loopback HTTP. Compare with BenchmarkStreamRawHTTP, the same exchange
// with the body read and thrown away, for the provider's own overhead.
func BenchmarkStream(b *testing.B) {
	_, c := setup(b, modeltest.Config{Default: benchReply})
	req := userRequest("Why does the test fail?")
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range c.Stream(b.Context(), req) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n < 100 {
			b.Fatalf("%d chunks", n)
		}
	}
}

func BenchmarkStreamRawHTTP(b *testing.B) {
	s, _ := setup(b, modeltest.Config{Default: benchReply})
	body, err := anthropic.MarshalRequest(&model.Request{Model: "claude-test", MaxTokens: 1000, Messages: userRequest("Why does the test fail?").Messages})
	if err != nil {
		b.Fatal(err)
	}
	hc := s.Client()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, s.URL+"/v1/messages", strings.NewReader(string(body)))
		req.Header.Set("x-api-key", "test-key")
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
}

// BenchmarkMarshalRequest encodes a long conversation: 100 turns of a tool
// call and its result.
func BenchmarkMarshalRequest(b *testing.B) {
	req := &model.Request{Model: "claude-test", MaxTokens: 32000, System: []model.SystemBlock{{Text: strings.Repeat("system ", 2000), Cache: true}}}
	for i := range 100 {
		id := fmt.Sprintf("toolu_%03d", i)
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("Reading."), {Type: model.BlockToolUse, ID: id, Name: "Read", Input: json.RawMessage(`{"file_path":"/src/a.go"}`)}}},
			model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(id, strings.Repeat("line of code\n", 100), false)}},
		)
	}
	body, _ := anthropic.MarshalRequest(req)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := anthropic.MarshalRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}

// canned answers every request with the same recorded response.
type canned struct {
	header http.Header
	body   []byte
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: c.header.Clone(), Request: req,
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
	}, nil
}

// BenchmarkStreamDecode measures the provider alone: the response recorded
// from the fake server is replayed from memory, so the figure is the cost
// of decoding the events and building the chunks, per response.
func BenchmarkStreamDecode(b *testing.B) {
	s, _ := setup(b, modeltest.Config{Default: benchReply})
	body, _ := anthropic.MarshalRequest(&model.Request{Model: "claude-test", MaxTokens: 1000, Messages: userRequest("hi").Messages})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("x-api-key", "test-key")
	res, err := s.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	rec, _ := io.ReadAll(res.Body)
	res.Body.Close()
	events := bytes.Count(rec, []byte("\n\n"))

	c, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://canned.invalid", Model: "claude-test",
		HTTPClient: &http.Client{Transport: &canned{header: res.Header, body: rec}}})
	if err != nil {
		b.Fatal(err)
	}
	r := userRequest("hi")
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range c.Stream(b.Context(), r) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
}

// BenchmarkMarshalResumed encodes the request of a resumed session: the
// conversation of a generated 10 MB transcript (3 MB of messages, the
// resume's first request before any compaction clears old results).
func BenchmarkMarshalResumed(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gen.Generate(f, gen.Options{Size: 10 << 20, Seed: 13}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	src, err := transcript.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(b.Context(), src, transcript.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req := &model.Request{Model: "claude-test", MaxTokens: 32000, System: []model.SystemBlock{{Text: "You are a coding agent.", Cache: true}}, Messages: conv.Messages()}
	body, err := anthropic.MarshalRequest(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := anthropic.MarshalRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
