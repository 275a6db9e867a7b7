package gen_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
)

// sample is the real Claude Code 2.1.197 transcript kept for compatibility
// tests.
const sample = "../../transcript/testdata/cc-2.1.197-manual-compact.jsonl"

func generate(t *testing.T, opts gen.Options) ([]byte, gen.Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := gen.Generate(&buf, opts)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return buf.Bytes(), st
}

func TestGenerateDeterministic(t *testing.T) {
	opts := gen.Options{Size: 300 << 10, Seed: 7, CompactEvery: 80 << 10}
	a, sa := generate(t, opts)
	b, sb := generate(t, opts)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same options wrote different bytes")
	}
	if diff := cmp.Diff(sa, sb); diff != "" {
		t.Fatalf("two runs with the same options differ in stats (-first +second):\n%s", diff)
	}
	opts.Seed = 8
	if c, _ := generate(t, opts); bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 wrote the same bytes")
	}
}

func TestGenerateStats(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts gen.Options
	}{
		{"compacting", gen.Options{Size: 800 << 10, Seed: 1, CompactEvery: 100 << 10}},
		{"no compaction", gen.Options{Size: 400 << 10, Seed: 1}},
		{"tiny", gen.Options{Size: 1, Seed: 3, Compact: true}},
		{"chinese", gen.Options{Size: 400 << 10, Seed: 1, Chinese: 0.5}},
		{"terse", gen.Options{Size: 400 << 10, Seed: 1, Terse: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, st := generate(t, tc.opts)
			if st.Bytes != int64(len(out)) || st.Bytes < tc.opts.Size {
				t.Errorf("Bytes = %d, wrote %d, want at least %d", st.Bytes, len(out), tc.opts.Size)
			}
			if n := bytes.Count(out, []byte("\n")); st.Lines != n {
				t.Errorf("Lines = %d, the output has %d", st.Lines, n)
			}
			if !tc.opts.Compact && tc.opts.CompactEvery == 0 && st.Compactions != 0 {
				t.Errorf("Compactions = %d without Compact", st.Compactions)
			}
			if every := tc.opts.CompactEvery; every > 0 && tc.opts.Size > 4*every && st.Compactions < 2 {
				t.Errorf("Compactions = %d, want at least 2 in %d bytes compacting every %d", st.Compactions, st.Bytes, tc.opts.CompactEvery)
			}
			if st.Turns < 1 || len(st.Resume) == 0 || st.Resume[len(st.Resume)-1] != st.Leaf {
				t.Errorf("Turns = %d, Resume ends %v, Leaf %s", st.Turns, st.Resume[max(0, len(st.Resume)-1):], st.Leaf)
			}
			// The last last-prompt record names the leaf.
			i := bytes.LastIndex(out, []byte(`{"type":"last-prompt"`))
			var last struct {
				LeafUUID string `json:"leafUuid"`
			}
			if i < 0 {
				t.Fatal("no last-prompt record")
			}
			if err := json.Unmarshal(bytes.SplitN(out[i:], []byte("\n"), 2)[0], &last); err != nil || last.LeafUUID != st.Leaf {
				t.Errorf("the last last-prompt record names %q (%v), want the leaf %s", last.LeafUUID, err, st.Leaf)
			}
		})
	}
}

// TestGenerateKeyOrder checks every generated line against the lines of the
// same kind in a real transcript: same keys in the same order, at the top
// level and in the nested objects that have a fixed shape.
func TestGenerateKeyOrder(t *testing.T) {
	want := make(map[string][]string)
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for k, keys := range shapes(t, sc.Bytes()) {
			if prev, ok := want[k]; ok && !slices.Equal(prev, keys) {
				t.Fatalf("the sample has two shapes for %s: %v and %v", k, prev, keys)
			}
			want[k] = keys
		}
	}
	out, _ := generate(t, gen.Options{Size: 1500 << 10, Seed: 11, CompactEvery: 100 << 10})
	checked := make(map[string]int)
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		for k, keys := range shapes(t, line) {
			w, ok := want[k]
			if !ok {
				continue
			}
			checked[k]++
			if diff := cmp.Diff(w, keys); diff != "" {
				t.Errorf("line %d, %s: keys differ from Claude Code's (-want +got):\n%s", i+1, k, diff)
			}
		}
	}
	for _, k := range []string{
		"queue-operation/enqueue", "queue-operation/dequeue", "last-prompt", "last-prompt/after-compact",
		"user/prompt", "user/prompt.message", "user/tool_result", "user/tool_result.message", "tool_result",
		"toolUseResult/Read", "toolUseResult/Bash", "toolUseResult/Edit",
		"assistant", "assistant.message", "assistant.usage",
		"attachment/agent_listing_delta", "attachment/agent_listing_delta.attachment",
		"attachment/skill_listing.attachment", "attachment/task_reminder.attachment",
		"attachment/file", "attachment/file.attachment",
		"system/compact_boundary", "system/compact_boundary.compactMetadata",
		"user/summary", "user/meta",
	} {
		if checked[k] == 0 {
			t.Errorf("no generated line of kind %s", k)
		}
	}
}

// shapes classifies a line and returns the key lists to compare, by kind.
func shapes(t *testing.T, line []byte) map[string][]string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		t.Fatalf("invalid line %s: %v", line, err)
	}
	str := func(raw json.RawMessage) string {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	keys := objectKeys(t, line)
	// slug appears once a session has one; it is compared by presence
	// elsewhere, not by kind.
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "slug" })
	out := make(map[string][]string)
	typ := str(top["type"])
	switch typ {
	case "queue-operation":
		out[typ+"/"+str(top["operation"])] = keys
	case "last-prompt":
		if _, ok := top["lastPrompt"]; ok {
			out[typ] = keys
		} else {
			out[typ+"/after-compact"] = keys
		}
	case "user":
		var msg struct {
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(top["message"], &msg)
		kind := "user/local"
		switch {
		case top["toolUseResult"] != nil:
			kind = "user/tool_result"
			var blocks []json.RawMessage
			json.Unmarshal(msg.Content, &blocks)
			if len(blocks) == 1 {
				k := objectKeys(t, blocks[0])
				if slices.Contains(k, "is_error") {
					out["tool_result.is_error"] = k
				} else {
					out["tool_result"] = k
				}
			}
			if tur := top["toolUseResult"]; tur[0] == '{' {
				k := objectKeys(t, tur)
				switch k[0] {
				case "type":
					var d struct{ Type string }
					json.Unmarshal(tur, &d)
					if d.Type == "text" {
						out["toolUseResult/Read"] = k
					}
				case "stdout":
					out["toolUseResult/Bash"] = k
				case "filePath":
					out["toolUseResult/Edit"] = k
				}
			}
		case top["permissionMode"] != nil:
			kind = "user/prompt"
		case top["isCompactSummary"] != nil:
			kind = "user/summary"
		case top["isMeta"] != nil:
			kind = "user/meta"
		}
		out[kind] = keys
		out[kind+".message"] = objectKeys(t, top["message"])
	case "assistant":
		var msg struct {
			Model string          `json:"model"`
			Usage json.RawMessage `json:"usage"`
		}
		json.Unmarshal(top["message"], &msg)
		if msg.Model == "<synthetic>" {
			break
		}
		out[typ] = keys
		out[typ+".message"] = objectKeys(t, top["message"])
		out[typ+".usage"] = objectKeys(t, msg.Usage)
	case "attachment":
		var a struct{ Type string }
		json.Unmarshal(top["attachment"], &a)
		out[typ+"/"+a.Type] = keys
		out[typ+"/"+a.Type+".attachment"] = objectKeys(t, top["attachment"])
	case "system":
		k := typ + "/" + str(top["subtype"])
		out[k] = keys
		if cm := top["compactMetadata"]; cm != nil {
			out[k+".compactMetadata"] = objectKeys(t, cm)
		}
	}
	return out
}

// objectKeys returns the keys of a JSON object in the order written.
func objectKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		keys = append(keys, tok.(string))
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return keys
}

// TestGenerateChinese: with Chinese, part of the prose is Chinese (valid
// UTF-8, written as it is, not as \u escapes, as Claude Code writes it),
// the code and its structure are not; without, the prose is English, as
// it was before the option.
func TestGenerateChinese(t *testing.T) {
	share := func(b []byte) float64 {
		n := 0
		for _, c := range b {
			if c >= 0x80 {
				n++
			}
		}
		return float64(n) / float64(len(b))
	}
	plain, _ := generate(t, gen.Options{Size: 400 << 10, Seed: 1})
	if bytes.Contains(plain, []byte("的")) || share(plain) > 0.005 {
		t.Errorf("without Chinese: %.4f of the bytes are not ASCII (an em dash here and there), or Chinese is in it", share(plain))
	}
	zh, _ := generate(t, gen.Options{Size: 400 << 10, Seed: 1, Chinese: 0.5})
	if !utf8.Valid(zh) {
		t.Fatal("with Chinese: not valid UTF-8")
	}
	if s := share(zh); s < 0.02 || s > 0.2 {
		t.Errorf("with Chinese 0.5: %.3f of the bytes are multi-byte UTF-8, want a few percent", s)
	}
	if !bytes.Contains(zh, []byte("的")) || bytes.Contains(zh, []byte(`\u`)) {
		t.Error("with Chinese 0.5: want Chinese prose written as UTF-8, with no \\u escapes")
	}
}

// TestGenerateTerse: terse results put half as many lines again or more in the
// same bytes, and every tool result is a few lines.
func TestGenerateTerse(t *testing.T) {
	plain, ps := generate(t, gen.Options{Size: 1 << 20, Seed: 4})
	terse, ts := generate(t, gen.Options{Size: 1 << 20, Seed: 4, Terse: true})
	perMB := func(st gen.Stats, b []byte) float64 { return float64(st.Lines) / float64(len(b)) * (1 << 20) }
	if perMB(ts, terse) < 1.5*perMB(ps, plain) {
		t.Errorf("%.0f lines a megabyte terse, %.0f not: want half as many again at least", perMB(ts, terse), perMB(ps, plain))
	}
	for line := range bytes.Lines(terse) {
		var e struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil || !bytes.HasPrefix(e.Message.Content, []byte(`[{"tool_use_id"`)) {
			continue
		}
		var blocks []struct {
			Content any `json:"content"`
		}
		if err := json.Unmarshal(e.Message.Content, &blocks); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if s, ok := b.Content.(string); ok && strings.Count(s, "\n") > 15 {
				t.Fatalf("a terse tool result of %d lines:\n%s", strings.Count(s, "\n")+1, s)
			}
		}
	}
}

// TestGenerateWindow: with a window, no response records more usage than
// it, the usage reaches it once the context outgrows it, and the session
// is the same one: its lines but for the usage are those without the
// window, to where that file ends (capped counts are shorter, so the
// size may be reached a turn later).
func TestGenerateWindow(t *testing.T) {
	const window = 200_000
	plain, ps := generate(t, gen.Options{Size: 4 << 20, Seed: 4})
	capped, cs := generate(t, gen.Options{Size: 4 << 20, Seed: 4, Window: window})
	if cs.Lines < ps.Lines || cs.Turns < ps.Turns {
		t.Errorf("%d lines and %d turns with the window, %d and %d without", cs.Lines, cs.Turns, ps.Lines, ps.Turns)
	}
	usage := regexp.MustCompile(`"usage":\{("[a-z_]+":(\d+|"[a-z]*"|\{[^{}]*\}|\[\]),?)*\}`)
	cappedLines := bytes.Split(capped, []byte("\n"))
	for i, line := range bytes.Split(plain, []byte("\n")) {
		a, b := usage.ReplaceAll(line, nil), usage.ReplaceAll(cappedLines[i], nil)
		if !bytes.Equal(a, b) {
			t.Fatalf("line %d differs beyond its usage:\n%.300s\n%.300s", i+1, a, b)
		}
		if bytes.Contains(a, []byte(`"usage"`)) {
			t.Fatalf("line %d: the usage pattern missed its usage: %.300s", i+1, a)
		}
	}
	most := func(out []byte) (n int64) {
		for line := range bytes.Lines(out) {
			var e struct {
				Message struct {
					Usage struct {
						Input    int64 `json:"input_tokens"`
						Creation int64 `json:"cache_creation_input_tokens"`
						Read     int64 `json:"cache_read_input_tokens"`
						Output   int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatal(err)
			}
			u := e.Message.Usage
			n = max(n, u.Input+u.Creation+u.Read+u.Output)
		}
		return n
	}
	if n := most(plain); n <= window {
		t.Fatalf("without the window the usage reaches %d: the test needs a context past %d", n, window)
	}
	if n := most(capped); n > window || n < window*9/10 {
		t.Errorf("with a window of %d the usage reaches %d: want it near the window, never over", window, n)
	}
}
