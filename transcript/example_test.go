package transcript_test

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn/transcript"
)

// A transcript is Claude Code's JSONL: Load rebuilds the conversation
// from its lines, following each line's parent.
func ExampleLoad() {
	lines := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-12-01T09:00:00Z","message":{"role":"user","content":"What time is it?"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-12-01T09:00:01Z","message":{"id":"msg_1","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Nine o'clock."}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":4}}}
`
	c, err := transcript.Load(context.Background(), transcript.BytesSource([]byte(lines)), transcript.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range c.Messages() {
		fmt.Printf("%s: %s (line %s)\n", m.Role, m.Text(), m.IDs[0])
	}
	// Output:
	// user: What time is it? (line u1)
	// assistant: Nine o'clock. (line a1)
}

// The memory store keeps sessions as the file store does, for tests and
// for programs that keep nothing on disk. A conversation that ends with
// the user's message reads with the reply Claude Code adds on a resume.
func ExampleMemStore() {
	ctx := context.Background()
	store := transcript.NewMemStore()
	store.AppendRaw("s", []byte(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-12-01T09:00:00Z","message":{"role":"user","content":"hello"}}`+"\n"))
	src, err := store.OpenSource(ctx, "s")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	c, err := transcript.Load(ctx, src, transcript.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range c.Messages() {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	// Output:
	// user: hello
	// assistant: No response requested.
}
