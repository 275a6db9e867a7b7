package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

func FuzzDecodeEntry(f *testing.F) {
	sample, _ := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	for _, line := range bytes.Split(sample, []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"type":"x","parentUuid":null,"uuid":"u","extra":{"a":[1,"<b>"]}}`))
	f.Add([]byte(`{"type":"user","message":null,"content":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := transcript.DecodeEntry(line)
		if err != nil {
			return
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("MarshalJSON wrote invalid JSON: %s", out)
		}
		back, err := transcript.DecodeEntry(out)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, out)
		}
		if back.Type != e.Type || back.UUID != e.UUID || back.ParentUUID != e.ParentUUID || back.SessionID != e.SessionID {
			t.Fatalf("round trip changed the envelope:\n%+v\n%+v", e, back)
		}
		for k, v := range e.Unknown() {
			var a, b any
			json.Unmarshal(v, &a)
			json.Unmarshal(back.Unknown()[k], &b)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("unknown field %q changed: %s → %s", k, v, back.Unknown()[k])
			}
		}
	})
}

// FuzzLoad feeds arbitrary files to the loader: it must never fail on bad
// content, never hang, and always produce a conversation the API accepts.
func FuzzLoad(f *testing.F) {
	// Small seeds keep the fuzzer fast; the lines are real Claude Code ones.
	sample, _ := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	lines := bytes.SplitAfter(sample, []byte("\n"))
	f.Add(bytes.Join([][]byte{lines[17], lines[18], lines[19], lines[20], lines[21]}, nil)) // parallel calls
	f.Add(bytes.Join([][]byte{lines[33], lines[39], lines[40], lines[41], lines[52]}, nil)) // compaction
	f.Add([]byte("{}\n\x00\x00{\"type\":\"user\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := transcript.Load(context.Background(), transcript.BytesSource(data), transcript.LoadOptions{})
		if err != nil {
			t.Fatalf("Load failed on bad input: %v", err)
		}
		assertValidForAPI(t, c.Messages())
		// Through a cache, loading the file again, and again after it
		// grew, gives what loading it afresh gives.
		cache := &transcript.LineCache{}
		half := data[:len(data)/2]
		opts := func(c *transcript.LineCache) transcript.LoadOptions {
			n := 0
			return transcript.LoadOptions{
				Cache:   c,
				NewUUID: func() string { n++; return fmt.Sprintf("repair-%d", n) },
				Now:     func() time.Time { return time.Unix(1767225600, 0) },
			}
		}
		for _, d := range [][]byte{half, half, data, data} {
			want, _ := transcript.Load(context.Background(), transcript.BytesSource(d), opts(nil))
			got, err := transcript.Load(context.Background(), transcript.BytesSource(d), opts(cache))
			if err != nil {
				t.Fatalf("Load with a cache: %v", err)
			}
			if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
				t.Fatalf("Load with a cache differs (-fresh +cached):\n%s", diff)
			}
		}
	})
}

// summarize is what a load gave, for comparing two loads.
func summarize(c *transcript.Conversation) []string {
	out := []string{"leaf " + c.Leaf, "session " + c.SessionID, "prompt " + c.LastPrompt, fmt.Sprint("repaired ", c.Repaired)}
	for _, e := range c.Entries {
		b, _ := e.MarshalJSON()
		out = append(out, string(b))
	}
	return append(out, c.Warnings...)
}

// FuzzChain builds transcripts whose parent pointers, boundaries and snips
// are chosen by the fuzzer: loops, missing parents, duplicate uuids,
// boundaries naming absent messages.
func FuzzChain(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{3, 3, 3, 9, 1, 200, 7, 7, 7, 0, 4})
	f.Add(bytes.Repeat([]byte{5, 1, 2}, 30))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 600 {
			ops = ops[:600]
		}
		var lines []string
		id := func(i int) string { return fmt.Sprintf("u%03d", i) }
		for i := 0; i+1 < len(ops); i += 2 {
			kind, arg := ops[i]%8, int(ops[i+1])
			n := len(lines)
			parent := "null"
			if arg%5 != 0 {
				parent = fmt.Sprintf("%q", id((n+arg)%(n+3))) // sometimes ahead: missing or a loop
			}
			var line string
			switch kind {
			case 0, 1:
				line = fmt.Sprintf(`{"parentUuid":%s,"type":"user","uuid":%q,"message":{"role":"user","content":"p%d"}}`, parent, id(n), n)
			case 2:
				line = fmt.Sprintf(`{"parentUuid":%s,"type":"assistant","uuid":%q,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{}}]}}`, parent, id(n), arg%4, arg%6)
			case 3:
				line = fmt.Sprintf(`{"parentUuid":%s,"type":"user","uuid":%q,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"r"}]}}`, parent, id(n), arg%6)
			case 4:
				line = fmt.Sprintf(`{"parentUuid":null,"logicalParentUuid":%s,"type":"system","subtype":"compact_boundary","uuid":%q,"compactMetadata":{"preservedSegment":{"headUuid":%q,"anchorUuid":%q,"tailUuid":%q}}}`, parent, id(n), id(arg%(n+1)), id(n+1), id((arg/2)%(n+1)))
			case 5:
				line = fmt.Sprintf(`{"parentUuid":%s,"type":"system","subtype":"snip_boundary","uuid":%q,"snipMetadata":{"removedUuids":[%q,%q]}}`, parent, id(n), id(arg%(n+1)), id((arg*7)%(n+1)))
			case 6:
				line = fmt.Sprintf(`{"type":"last-prompt","leafUuid":%q}`, id(arg%(n+2)))
			case 7:
				line = fmt.Sprintf(`{"parentUuid":%s,"type":"assistant","uuid":%q,"message":{"id":"m%d","role":"assistant","content":[{"type":"text","text":"a%d"}]}}`, parent, id(arg%(n+1)), arg%4, n)
			}
			lines = append(lines, line)
		}
		data := []byte(fmt.Sprint(joinLines(lines)))
		c, err := transcript.Load(context.Background(), transcript.BytesSource(data), transcript.LoadOptions{})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		assertValidForAPI(t, c.Messages())
		seen := map[string]bool{}
		for _, e := range c.Entries {
			if seen[e.UUID] {
				t.Fatalf("entry %s appears twice in the chain", e.UUID)
			}
			seen[e.UUID] = true
		}
	})
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
