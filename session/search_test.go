package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
)

func TestSearch(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	dir := home.ProjectDir(cwd)

	a := newFixture(sidA, cwd, t0)
	a.queued("queued text is not searched")
	uPrompt := a.prompt("Fix the greeting in hello.py, l'été dernier")
	uCall := a.toolUse("toolu_1", "Bash", map[string]any{"command": "grep -rn Greeting src/", "timeout": 5})
	uResult := a.toolResult("toolu_1", "src/hello.py:1:print(\"hello wrld\")")
	a.user([]byte(`[{"tool_use_id":"toolu_2","type":"tool_result","content":[{"type":"text","text":"block result NEEDLE"}]}]`))
	uBlock := a.parent
	uSay := a.say("I fixed the typo: \"wrld\" → \"world\".\n\nThe greeting now prints correctly.")
	a.write(t, filepath.Join(dir, sidA+".jsonl"), t0.Add(time.Hour))
	pathA := filepath.Join(dir, sidA+".jsonl")

	b := newFixture(sidB, cwd, t0.Add(time.Hour))
	uB := b.prompt("another greeting")
	b.write(t, filepath.Join(dir, sidB+".jsonl"), t0.Add(2*time.Hour))
	pathB := filepath.Join(dir, sidB+".jsonl")

	side := newFixture(sidC, cwd, t0)
	side.prompt("greeting from a subagent")
	writeFile(t, filepath.Join(dir, sidC+".jsonl"),
		bytes.ReplaceAll(side.buf.Bytes(), []byte(`"isSidechain":false`), []byte(`"isSidechain":true`)), t0.Add(3*time.Hour))

	other := newFixture(sidC, "/elsewhere", t0)
	uOther := other.prompt("greeting elsewhere")
	pathOther := other.write(t, filepath.Join(home.ProjectDir("/elsewhere"), sidC+".jsonl"), t0)

	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	for _, tc := range []struct {
		name  string
		query string
		all   bool
		want  []Match
	}{
		{"prompt, any case", "FIX THE", false, []Match{
			{sidA, pathA, uPrompt, at(0), "Fix the greeting in hello.py, l'été dernier"},
		}},
		{"newest session first", "greeting", false, []Match{
			{sidB, pathB, uB, t0.Add(time.Hour), "another greeting"},
			{sidA, pathA, uPrompt, at(0), "Fix the greeting in hello.py, l'été dernier"},
			{sidA, pathA, uCall, at(1), "grep -rn Greeting src/"},
			{sidA, pathA, uSay, at(4), `I fixed the typo: "wrld" → "world". The greeting now prints correctly.`},
		}},
		{"all projects", "greeting e", true, []Match{
			{sidC, pathOther, uOther, t0, "greeting elsewhere"},
		}},
		{"tool input", "-rn greet", false, []Match{
			{sidA, pathA, uCall, at(1), "grep -rn Greeting src/"},
		}},
		{"tool result", `print("hello`, false, []Match{
			{sidA, pathA, uResult, at(2), `src/hello.py:1:print("hello wrld")`},
		}},
		{"tool result blocks", "needle", false, []Match{
			{sidA, pathA, uBlock, at(3), "block result NEEDLE"},
		}},
		{"non-ASCII, any case", "L'ÉTÉ", false, []Match{
			{sidA, pathA, uPrompt, at(0), "Fix the greeting in hello.py, l'été dernier"},
		}},
		{"across a newline in JSON", "world\". the", false, []Match{}},
		{"field names are not text", "command", false, []Match{}},
		{"side records are not searched", "queued text", false, []Match{}},
		{"nothing", "zebra", true, []Match{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Search(context.Background(), home, SearchOptions{Query: tc.query, Cwd: cwd, All: tc.all,
				Warn: func(s string) { t.Errorf("warning: %s", s) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Search(%q) (-want +got):\n%s", tc.query, diff)
			}
		})
	}

	t.Run("empty query", func(t *testing.T) {
		if _, err := Search(context.Background(), home, SearchOptions{Query: "  ", Cwd: cwd}); !errors.Is(err, ErrEmptyQuery) {
			t.Fatalf("err = %v; want ErrEmptyQuery", err)
		}
	})
}

func TestSearchSkipsOverlongLines(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/p"
	f := newFixture(sidA, cwd, t0)
	f.toolResult("toolu_1", "needle "+strings.Repeat("x", 100_000))
	u := f.prompt("needle after the long line")
	path := f.write(t, filepath.Join(home.ProjectDir(cwd), sidA+".jsonl"), t0)

	var warnings []string
	got, err := Search(context.Background(), home, SearchOptions{
		Query: "needle", Cwd: cwd, MaxLineBytes: 4096,
		Warn: func(s string) { warnings = append(warnings, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Match{{sidA, path, u, t0.Add(time.Second), "needle after the long line"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Search (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "line 1 is longer than 4096 bytes") {
		t.Errorf("warnings = %q; want one about line 1", warnings)
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("y", 100)
	for _, tc := range []struct {
		name string
		in   string
		want []string // "!" marks a skipped line
	}{
		{"empty", "", nil},
		{"lines", "a\nbb\n", []string{"a", "bb"}},
		{"no final newline", "a\nbb", []string{"a", "bb"}},
		{"blank lines", "\n\na", []string{"", "", "a"}},
		{"at the limit", strings.Repeat("z", 40) + "\nq", []string{strings.Repeat("z", 40), "q"}},
		{"over the limit", "a\n" + long + "\nb\n" + long, []string{"a", "!", "b", "!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := &lineReader{br: bufio.NewReaderSize(strings.NewReader(tc.in), 16), max: 40}
			var got []string
			for {
				line, skipped, err := lr.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if skipped {
					got = append(got, "!")
				} else {
					got = append(got, string(line))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("abcd ", 40) // 200 characters
	for _, tc := range []struct {
		name       string
		s          string
		start, end int
		want       string
	}{
		{"short", "find me here", 5, 7, "find me here"},
		{"whitespace", "a\n\n\tfind  me", 4, 8, "a find me"},
		{"centred", long + "MATCH" + long, 200, 205,
			"…d abcd abcd abcd abcd abcd abcd abcd MATCHabcd abcd abcd abcd abcd abcd abcd abc…"},
		{"at the start", "MATCH" + long, 0, 5, "MATCH" + strings.TrimSpace(long[:75]) + "…"},
		{"at the end", long + "MATCH", 200, 205, "…" + long[125:] + "MATCH"},
		{"runes", strings.Repeat("é", 100) + "x", 200, 201, "…" + strings.Repeat("é", 79) + "x"},
		{"long match", strings.Repeat("m", 100), 0, 100, strings.Repeat("m", 80) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := snippet(tc.s, tc.start, tc.end); got != tc.want {
				t.Errorf("snippet = %q\nwant      %q", got, tc.want)
			}
		})
	}
}

// TestInputText checks that a tool input's strings are joined in the
// input's own order, so one input always gives one snippet.
func TestInputText(t *testing.T) {
	in := []byte(`{"command":"b","description":"a","opts":["c",{"z":"d\u00e9","a":"e\/f"}],"n":3,"ok":true,"none":null}`)
	for range 20 {
		if got, want := inputText(in), "b a c dé e/f"; got != want {
			t.Fatalf("inputText = %q, want %q", got, want)
		}
	}
	if got := inputText([]byte(`{"command":`)); got != "" {
		t.Errorf("inputText of invalid JSON = %q, want none", got)
	}
}

// TestSearchEscapedText checks the raw filters against text that JSON
// holds escaped: a query whose characters the file writes as \u or \/
// escapes is found as a decoded search finds it, a non-ASCII query
// whose letters fold to others too, and a hit outside the message (its
// toolUseResult) alone is no match.
func TestSearchEscapedText(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/p"
	f := newFixture(sidA, cwd, t0)
	uEsc := f.user([]byte(`"Caf\u00e9 at src\/main.go"`))
	uKelvin := f.user([]byte(`"273 \u212a is cold, Ünïcødé"`))
	f.user([]byte(`[{"tool_use_id":"t","type":"tool_result","content":"ok"}]`), "resultMarker")
	path := filepath.Join(home.ProjectDir(cwd), sidA+".jsonl")
	uKey := f.prompt("okapi under an escaped key")
	data := bytes.ReplaceAll(f.buf.Bytes(), []byte(`"resultMarker":true`), []byte(`"toolUseResult":{"stdout":"zebra café"}`))
	data = bytes.Replace(data, []byte(`"message":{"role":"user","content":"okapi`), []byte(`"m\u0065ssage":{"role":"user","content":"okapi`), 1)
	writeFile(t, path, data, t0)
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	for _, tc := range []struct {
		query string
		want  []Match
	}{
		{"CAFÉ AT", []Match{{sidA, path, uEsc, at(0), "Café at src/main.go"}}},
		{"café at src/MAIN", []Match{{sidA, path, uEsc, at(0), "Café at src/main.go"}}},
		{"3 k is", []Match{}}, // ASCII queries match ASCII letters only
		{"3 k is ünï", []Match{}},
		{"273 k is cold, ünï", []Match{{sidA, path, uKelvin, at(1), "273 \u212a is cold, Ünïcødé"}}},
		{"zebra", []Match{}},
		{"zebra café", []Match{}},
		{"OKAPI under", []Match{{sidA, path, uKey, at(3), "okapi under an escaped key"}}},
		{"okapi ünder", []Match{}},
	} {
		got, err := Search(context.Background(), home, SearchOptions{Query: tc.query, Cwd: cwd})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Search(%q) (-want +got):\n%s", tc.query, diff)
		}
	}
}

// FuzzIndexFold checks indexFold against folding both sides and
// bytes.Index.
func FuzzIndexFold(f *testing.F) {
	f.Add([]byte("Hello World"), "world")
	f.Add([]byte("aaaAAab"), "aab")
	f.Add([]byte("x"), "xy")
	f.Add([]byte("zzZq"), "zq")
	f.Fuzz(func(t *testing.T, s []byte, q string) {
		for i := 0; i < len(q); i++ {
			if q[i] >= 0x80 {
				return
			}
		}
		lower := []byte(lowerASCII(q))
		want := bytes.Index([]byte(lowerASCII(string(s))), lower)
		if got := indexFold(s, lower); got != want {
			t.Fatalf("indexFold(%q, %q) = %d, want %d", s, lower, got, want)
		}
	})
}

// BenchmarkSearch searches a generated 20 MB session for a word it does
// not hold, a word on most tool results, a path in the envelope of every
// line and a query that is not ASCII. cpu-ms/op is the CPU time of the
// process, steadier than wall time on a busy machine.
func BenchmarkSearch(b *testing.B) {
	home := Home{Dir: b.TempDir()}
	cwd := gen.CWD
	var buf bytes.Buffer
	st, err := gen.Generate(&buf, gen.Options{Size: 20 << 20, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(home.ProjectDir(cwd), st.SessionID+".jsonl"), buf.Bytes(), t0)
	for _, q := range []string{"needle", "test", "acme-api", "café"} {
		b.Run(q, func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := Search(context.Background(), home, SearchOptions{Query: q, Cwd: cwd}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
