package compact

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/transcript"
)

// benchConvs holds the generated conversations, by size, across runs.
var benchConvs sync.Map

// benchConversation resumes a generated session of size bytes with no
// compaction in it: the conversation a resume of a long session sends.
func benchConversation(b *testing.B, size int64) *transcript.Conversation {
	if c, ok := benchConvs.Load(size); ok {
		return c.(*transcript.Conversation)
	}
	path := filepath.Join(b.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gen.Generate(f, gen.Options{Size: size, Seed: 13}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	benchConvs.Store(size, conv)
	return conv
}

// firstRequest is a model that encodes the first request it is sent, as
// the Anthropic provider does, and then stops the turn.
type firstRequest struct {
	b      *testing.B
	cpu    *time.Duration // the process's CPU time, added to when the request is sent
	body   int
	cancel context.CancelFunc
}

func (f *firstRequest) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		body, err := anthropic.MarshalRequest(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if f.body == 0 {
			f.b.StopTimer() // what follows the first request is not measured
			*f.cpu += cpuTime()
			f.body = len(body)
		}
		f.cancel()
		yield(model.Chunk{}, ctx.Err())
	}
}

// nopRecorder records nothing.
type nopRecorder struct{}

func (nopRecorder) Prompt(context.Context, model.Message, []engine.Attachment) ([]string, error) {
	return []string{"prompt"}, nil
}
func (nopRecorder) Response(context.Context, *model.Response) ([]string, error) { return nil, nil }
func (nopRecorder) Results(context.Context, *model.Response, []engine.Outcome) ([]string, error) {
	return nil, nil
}
func (nopRecorder) TurnDone(context.Context) error { return nil }

// BenchmarkFirstRequest measures a resumed session's first turn over a
// generated conversation, as an agent sets it up (snip, then micro-
// compaction with the cache cold), up to its first model request encoded
// as the Anthropic provider encodes it: the work a resume does before the
// model is first asked anything. At 10 MB the conversation is under the
// threshold and the request is the turn's; at 100 MB it is far over, and
// the request is the first of the summary's parts.
func BenchmarkFirstRequest(b *testing.B) {
	for _, size := range []int64{10 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			conv := benchConversation(b, size)
			history := conv.Messages()
			usage, at := conv.UsageAt(history)
			system := []model.SystemBlock{{Text: "You are a coding agent.", Cache: true}}
			w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
			now := conv.LastAssistantTime().Add(2 * time.Hour)
			var body int
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cpu -= cpuTime()
				ctx, cancel := context.WithCancel(b.Context())
				fm := &firstRequest{b: b, cpu: &cpu, cancel: cancel}
				m := New(Config{Model: fm, ModelName: "claude-test", Window: w, Transcript: &countTranscript{}, Now: func() time.Time { return now }})
				m.AddLayer(NewSnip(SnipConfig{}))
				m.AddLayer(NewMicro(MicroConfig{Tools: []string{"Read", "Bash", "Grep", "Glob"}, Transcript: &countTranscript{}, Cleared: conv.Cleared, Since: conv.LastAssistantTime()}))
				s := engine.New(engine.Config{Model: fm, ModelName: "claude-test", Recorder: nopRecorder{}, Prepare: m.Prepare, Now: func() time.Time { return now },
					System: func(context.Context) ([]model.SystemBlock, error) { return system, nil }}, history)
				s.SetUsage(usage, at)
				for range s.Run(ctx, engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("hi")}}}) {
				}
				cancel()
				if fm.body == 0 {
					b.Fatal("no request was sent")
				}
				body = fm.body
				// Each run starts from a collected heap: the conversation is
				// hundreds of megabytes, and a collection that the previous
				// run's garbage started would be timed here. What a run
				// allocates is reported beside its time.
				runtime.GC()
				b.StartTimer()
			}
			b.ReportMetric(float64(body), "body-bytes")
			// CPU time, the GC's included, says more than the wall clock
			// on a machine shared with other work.
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
