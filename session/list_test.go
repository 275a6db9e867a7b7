package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// t0 is the clock every fixture starts from.
var t0 = time.Date(2026, 11, 30, 6, 21, 20, 0, time.UTC)

// fixture writes transcripts the way Claude Code lays them out: key order,
// envelopes, one line per assistant block, last-prompt records.
type fixture struct {
	sid, cwd string
	now      time.Time
	seq      int
	parent   string
	buf      bytes.Buffer
}

func newFixture(sid, cwd string, start time.Time) *fixture {
	return &fixture{sid: sid, cwd: cwd, now: start}
}

func (f *fixture) uuid() string {
	f.seq++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", len(f.sid)*7919+int(f.sid[0]), f.seq)
}

func (f *fixture) envelope(o *jsonw.Object, uuid string) {
	o.Str("uuid", uuid)
	o.Str("timestamp", f.now.UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Str("userType", "external")
	o.Str("entrypoint", "cli")
	o.Str("cwd", f.cwd)
	o.Str("sessionId", f.sid)
	o.Str("version", "2.1.197")
	o.Str("gitBranch", "main")
	f.now = f.now.Add(time.Second)
	f.parent = uuid
}

func (f *fixture) chainStart(o *jsonw.Object) {
	if f.parent == "" {
		o.Null("parentUuid")
	} else {
		o.Str("parentUuid", f.parent)
	}
	o.Bool("isSidechain", false)
}

func (f *fixture) line(o *jsonw.Object) {
	f.buf.Write(o.Bytes())
	f.buf.WriteByte('\n')
}

// user appends a user line whose content is raw JSON; flags such as
// "isMeta" are set to true.
func (f *fixture) user(content json.RawMessage, flags ...string) string {
	var o jsonw.Object
	f.chainStart(&o)
	o.Str("type", "user")
	o.Raw("message", []byte(`{"role":"user","content":`+string(content)+`}`))
	for _, fl := range flags {
		o.Bool(fl, true)
	}
	u := f.uuid()
	f.envelope(&o, u)
	f.line(&o)
	return u
}

func (f *fixture) prompt(text string, flags ...string) string {
	return f.user(jsonw.String(text), flags...)
}

func (f *fixture) assistant(block string) string {
	var o jsonw.Object
	f.chainStart(&o)
	o.Raw("message", []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[`+block+`],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":5}}`))
	o.Str("requestId", "req_1")
	o.Str("type", "assistant")
	u := f.uuid()
	f.envelope(&o, u)
	f.line(&o)
	return u
}

func (f *fixture) say(text string) string {
	return f.assistant(`{"type":"text","text":` + string(jsonw.String(text)) + `}`)
}

func (f *fixture) toolUse(id, name string, input any) string {
	in, _ := json.Marshal(input)
	return f.assistant(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, name, in))
}

func (f *fixture) toolResult(id, content string) string {
	return f.user([]byte(`[{"tool_use_id":` + string(jsonw.String(id)) + `,"type":"tool_result","content":` + string(jsonw.String(content)) + `}]`))
}

func (f *fixture) attachment() {
	var o jsonw.Object
	f.chainStart(&o)
	o.Raw("attachment", []byte(`{"type":"skill_listing","content":"- a skill"}`))
	o.Str("type", "attachment")
	f.envelope(&o, f.uuid())
	f.line(&o)
}

func (f *fixture) lastPrompt(text string) {
	var o jsonw.Object
	o.Str("type", "last-prompt")
	o.OptStr("lastPrompt", text)
	o.Str("leafUuid", f.parent)
	o.Str("sessionId", f.sid)
	f.line(&o)
}

func (f *fixture) queued(text string) {
	var o jsonw.Object
	o.Str("type", "queue-operation")
	o.Str("operation", "enqueue")
	o.Str("timestamp", f.now.UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Str("sessionId", f.sid)
	o.Str("content", text)
	f.line(&o)
}

// write puts the transcript at path with the given modification time.
func (f *fixture) write(t testing.TB, path string, mtime time.Time) string {
	t.Helper()
	writeFile(t, path, f.buf.Bytes(), mtime)
	return path
}

func writeFile(t testing.TB, path string, b []byte, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// turn appends a typical turn: prompt, a tool call and its result, an
// answer, and the last-prompt record.
func (f *fixture) turn(prompt string) {
	f.queued(prompt)
	f.prompt(prompt)
	f.attachment()
	id := fmt.Sprintf("toolu_%d", f.seq)
	f.toolUse(id, "Read", map[string]string{"file_path": "/src/main.go"})
	f.toolResult(id, "1\tpackage main\n2\t\n3\tfunc main() {}\n")
	f.say("Done: " + prompt)
	f.lastPrompt(shortPrompt(prompt))
}

const (
	sidA = "0ce29c1b-1cb1-464f-a89e-ec36d073cc93"
	sidB = "1de29c1b-1cb1-464f-a89e-ec36d073cc94"
	sidC = "2ee29c1b-1cb1-464f-a89e-ec36d073cc95"
)

func TestList(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	dir := home.ProjectDir(cwd)

	a := newFixture(sidA, cwd, t0)
	a.turn("fix the greeting\nin hello.py")
	a.turn("now write CHANGES.md")
	a.write(t, filepath.Join(dir, sidA+".jsonl"), t0.Add(time.Hour))

	// Markup, meta lines, interruptions and tool results are not prompts;
	// with no last-prompt record the tail's last typed prompt is used.
	b := newFixture(sidB, cwd, t0.Add(time.Minute))
	b.prompt("<command-name>/clear</command-name>")
	b.prompt("Caveat: local commands", "isMeta")
	b.prompt("summary of earlier work", "isCompactSummary")
	b.prompt("[Request interrupted by user for tool use]")
	b.toolResult("toolu_x", "output")
	b.user([]byte(`[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"` + strings.Repeat("long ", 60) + `"}]`))
	b.say("ok")
	b.prompt("second prompt")
	b.say("ok")
	b.write(t, filepath.Join(dir, sidB+".jsonl"), t0.Add(2*time.Hour))

	// A subagent transcript is not a session.
	c := newFixture(sidC, cwd, t0)
	c.prompt("agent work")
	c.write(t, filepath.Join(dir, sidC+".jsonl"), t0.Add(3*time.Hour))
	side := bytes.ReplaceAll(c.buf.Bytes(), []byte(`"isSidechain":false`), []byte(`"isSidechain":true`))
	writeFile(t, filepath.Join(dir, sidC+".jsonl"), side, t0.Add(3*time.Hour))

	// An empty transcript is not listed (there is nothing to resume).
	writeFile(t, filepath.Join(dir, "notes.jsonl"), nil, t0.Add(30*time.Minute))
	writeFile(t, filepath.Join(dir, "README.md"), []byte("x"), t0.Add(4*time.Hour))

	other := newFixture(sidC, "/home/user/other", t0)
	other.turn("elsewhere")
	other.write(t, filepath.Join(home.ProjectDir("/home/user/other"), sidC+".jsonl"), t0.Add(5*time.Hour))

	sizeOf := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	wantB := Info{
		SessionID: sidB, Project: cwd, Path: filepath.Join(dir, sidB+".jsonl"),
		Created: t0.Add(time.Minute), Modified: t0.Add(2 * time.Hour), Messages: 9,
		Bytes:       sizeOf(filepath.Join(dir, sidB+".jsonl")),
		FirstPrompt: strings.TrimSpace(strings.Repeat("long ", 40)) + "…",
		LastPrompt:  "second prompt",
	}
	wantA := Info{
		SessionID: sidA, Project: cwd, Path: filepath.Join(dir, sidA+".jsonl"),
		Created: t0, Modified: t0.Add(time.Hour), Messages: 8,
		Bytes:       sizeOf(filepath.Join(dir, sidA+".jsonl")),
		FirstPrompt: "fix the greeting in hello.py", LastPrompt: "now write CHANGES.md",
	}
	wantOther := Info{
		SessionID: sidC, Project: "/home/user/other",
		Path:    filepath.Join(home.ProjectDir("/home/user/other"), sidC+".jsonl"),
		Created: t0, Modified: t0.Add(5 * time.Hour), Messages: 4,
		Bytes:       sizeOf(filepath.Join(home.ProjectDir("/home/user/other"), sidC+".jsonl")),
		FirstPrompt: "elsewhere", LastPrompt: "elsewhere",
	}

	for _, tc := range []struct {
		name string
		opts ListOptions
		want []Info
	}{
		{"project", ListOptions{Cwd: cwd}, []Info{wantB, wantA}},
		{"all", ListOptions{All: true}, []Info{wantOther, wantB, wantA}},
		{"no such project", ListOptions{Cwd: "/nowhere"}, []Info{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pass := range []string{"cold", "warm"} {
				got, err := List(context.Background(), home, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s: List (-want +got):\n%s", pass, diff)
				}
			}
		})
	}
}

func TestListEmptyHome(t *testing.T) {
	got, err := List(context.Background(), Home{Dir: t.TempDir()}, ListOptions{All: true})
	if err != nil || len(got) != 0 {
		t.Fatalf("List of an empty home = %v, %v; want nothing", got, err)
	}
}

func TestLatest(t *testing.T) {
	ctx := context.Background()
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	dir := home.ProjectDir(cwd)

	t.Run("none", func(t *testing.T) {
		_, err := Latest(ctx, home, cwd)
		if !errors.Is(err, ErrNoSessions) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Latest = %v; want ErrNoSessions naming %s", err, dir)
		}
	})

	a := newFixture(sidA, cwd, t0)
	a.turn("older")
	a.write(t, filepath.Join(dir, sidA+".jsonl"), t0.Add(time.Hour))
	b := newFixture(sidB, cwd, t0.Add(2*time.Hour)) // started later, modified earlier
	b.turn("newer start")
	b.write(t, filepath.Join(dir, sidB+".jsonl"), t0.Add(30*time.Minute))
	side := newFixture(sidC, cwd, t0)
	side.prompt("agent")
	writeFile(t, filepath.Join(dir, sidC+".jsonl"),
		bytes.ReplaceAll(side.buf.Bytes(), []byte(`"isSidechain":false`), []byte(`"isSidechain":true`)), t0.Add(5*time.Hour))

	t.Run("newest mtime", func(t *testing.T) {
		got, err := Latest(ctx, home, cwd)
		if err != nil {
			t.Fatal(err)
		}
		if got.SessionID != sidA || got.Messages != 4 {
			t.Fatalf("Latest = %s with %d messages; want %s with 4", got.SessionID, got.Messages, sidA)
		}
	})
}

// countingOpener wraps os.Open and counts the bytes read.
type countingOpener struct{ n atomic.Int64 }

type countingFile struct {
	*os.File
	n *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

func (c *countingOpener) open(p string) (readerAtCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return countingFile{f, &c.n}, nil
}

// listCounting lists the project and returns the sessions and bytes read.
func listCounting(t *testing.T, home Home, cwd string) ([]Info, int64) {
	t.Helper()
	var c countingOpener
	l := newLister(home, func(s string) { t.Error(s) })
	l.open = c.open
	infos, err := l.list(context.Background(), ListOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	return infos, c.n.Load()
}

func TestListBigTranscriptReadsOnlyTheEnds(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/big"
	path := filepath.Join(home.ProjectDir(cwd), sidA+".jsonl")

	f := newFixture(sidA, cwd, t0)
	f.turn("first prompt")
	chunk := strings.Repeat("x", 1<<20) // 1 MiB tool results in the middle
	want := 4
	for i := 0; f.buf.Len() < 20<<20; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		f.toolUse(id, "Bash", map[string]string{"command": "cat big"})
		f.toolResult(id, chunk)
		want += 2
	}
	f.turn("last prompt")
	want += 4
	f.write(t, path, t0.Add(time.Hour))
	size := int64(f.buf.Len())
	ends := int64(2*liteBuf + 1)

	infos, read := listCounting(t, home, cwd)
	if len(infos) != 1 || infos[0].Messages != want {
		t.Fatalf("cold listing: %+v; want one session with %d messages", infos, want)
	}
	if read < size {
		t.Errorf("cold listing read %d bytes; counting needs the whole %d", read, size)
	}
	if _, err := os.Stat(home.countCachePath()); err != nil {
		t.Fatalf("no count cache after listing: %v", err)
	}

	infos, read = listCounting(t, home, cwd)
	if read > ends || infos[0].Messages != want {
		t.Errorf("warm listing read %d bytes and counted %d; want ≤ %d and %d", read, infos[0].Messages, ends, want)
	}
	if infos[0].FirstPrompt != "first prompt" || infos[0].LastPrompt != "last prompt" {
		t.Errorf("prompts = %q, %q", infos[0].FirstPrompt, infos[0].LastPrompt)
	}

	// Appending costs the appended bytes, not the file.
	more := newFixture(sidA, cwd, t0.Add(time.Hour))
	more.parent = "x"
	more.turn("appended prompt")
	appendFile(t, path, more.buf.Bytes(), t0.Add(2*time.Hour))
	infos, read = listCounting(t, home, cwd)
	if limit := ends + int64(more.buf.Len()); read > limit {
		t.Errorf("listing after an append read %d bytes; want ≤ %d", read, limit)
	}
	if infos[0].Messages != want+4 || infos[0].LastPrompt != "appended prompt" {
		t.Errorf("after append: %d messages, last prompt %q; want %d, %q", infos[0].Messages, infos[0].LastPrompt, want+4, "appended prompt")
	}

	// A file whose start changed is counted again.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("first prompt"), []byte("FIRST PROMPT"))
	writeFile(t, path, b, t0.Add(3*time.Hour))
	infos, read = listCounting(t, home, cwd)
	if read < int64(len(b)) || infos[0].Messages != want+4 || infos[0].FirstPrompt != "FIRST PROMPT" {
		t.Errorf("after a rewrite: read %d, %d messages, first %q; want a full recount", read, infos[0].Messages, infos[0].FirstPrompt)
	}

	// A file that shrank is counted again.
	short := b[:bytes.IndexByte(b[10<<20:], '\n')+10<<20+1]
	writeFile(t, path, short, t0.Add(4*time.Hour))
	infos, _ = listCounting(t, home, cwd)
	if got, want := infos[0].Messages, countByDecoding(short); got != want {
		t.Errorf("after shrinking: %d messages; want %d", got, want)
	}
}

func appendFile(t *testing.T, path string, b []byte, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// countByDecoding is the reference the chain counter must agree with: every
// line decoded as JSON.
func countByDecoding(b []byte) int {
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		typ, _ := m["type"].(string)
		id, _ := m["uuid"].(string)
		if (typ == "user" || typ == "assistant") && id != "" {
			n++
		}
	}
	return n
}

// allValidLines reports whether every non-blank line of b is valid JSON.
func allValidLines(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) {
			return false
		}
	}
	return true
}

// counted feeds b to a chainCounter in chunks of the given size.
func counted(b []byte, chunk int) int {
	var c chainCounter
	for len(b) > 0 {
		n := min(chunk, len(b))
		c.feed(b[:n])
		b = b[n:]
	}
	return c.n + c.pending()
}

func TestChainCounter(t *testing.T) {
	compat, err := os.ReadFile("/work/shared/compat/session_main_manualcompact_2.1.197.jsonl")
	if err != nil {
		t.Logf("compat sample not available: %v", err)
	}
	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"user", `{"type":"user","uuid":"a"}` + "\n", 1},
		{"assistant no newline", `{"type":"assistant","uuid":"a"}`, 1},
		{"side record", `{"type":"last-prompt","leafUuid":"a"}` + "\n", 0},
		{"attachment", `{"type":"attachment","uuid":"a"}` + "\n", 0},
		{"no uuid", `{"type":"user"}` + "\n", 0},
		{"null uuid", `{"type":"user","uuid":null}` + "\n", 0},
		{"empty uuid", `{"type":"user","uuid":""}` + "\n", 0},
		{"nested type", `{"message":{"type":"user","uuid":"a"},"type":"system","uuid":"b"}` + "\n", 0},
		{"nested after", `{"type":"user","message":{"type":"assistant"},"uuid":"b"}` + "\n", 1},
		{"escaped quotes", `{"message":"a \"type\":\"x\" \\","type":"user","uuid":"b"}` + "\n", 1},
		{"escaped key", `{"t\u0079pe":"user","uuid":"b"}` + "\n", 1},
		{"duplicate key", `{"type":"user","uuid":"b","type":"x"}` + "\n", 0},
		{"spaces", ` { "type" : "user" , "uuid" : "b" } ` + "\r\n", 1},
		{"torn line", `{"type":"user","uuid":"a","message":"cut` + "\n" + `{"type":"user","uuid":"b"}` + "\n", 1},
		{"torn escape", `{"type":"user","uuid":"a","m":"cut\` + "\n" + `{"type":"user","uuid":"b"}` + "\n", 1},
		{"unclosed", `{"type":"user","uuid":"a"` + "\n", 0},
		{"two values", `{"type":"user","uuid":"a"}{}` + "\n", 0},
		{"array", `[{"type":"user","uuid":"a"}]` + "\n", 0},
		{"compat sample", string(compat), countByDecoding(compat)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 2, 3, 5, 16, 1 << 20} {
				if got := counted([]byte(tc.in), chunk); got != tc.want {
					t.Errorf("chunks of %d: counted %d; want %d", chunk, got, tc.want)
				}
			}
		})
	}
}

func FuzzChainCounter(f *testing.F) {
	f.Add([]byte(`{"type":"user","uuid":"a","message":{"content":"a\"b\\"}}`+"\n"), 3)
	f.Add([]byte(`{"uuid":"x","type":"assistant"}`), 1)
	f.Add([]byte(`{"type":"user","uuid":"\u0041"}`+"\n"+`[1,{"type":"user"}]`), 7)
	f.Fuzz(func(t *testing.T, b []byte, chunk int) {
		if !allValidLines(b) {
			return
		}
		chunk = 1 + abs(chunk)%64
		if got, want := counted(b, chunk), countByDecoding(b); got != want {
			t.Fatalf("counted %d in chunks of %d; decoding finds %d", got, chunk, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestPromptOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want string
	}{
		{"string", `{"type":"user","message":{"content":"hello\nworld"}}`, "hello world"},
		{"blocks", `{"type":"user","message":{"content":[{"type":"text","text":"<ide_opened_file>x</ide_opened_file>"},{"type":"text","text":"do it"}]}}`, "do it"},
		{"tool result", `{"type":"user","message":{"content":[{"type":"tool_result","content":"x"},{"type":"text","text":"y"}]}}`, ""},
		{"meta", `{"type":"user","isMeta":true,"message":{"content":"x"}}`, ""},
		{"compact summary", `{"type":"user","isCompactSummary":true,"message":{"content":"x"}}`, ""},
		{"tag", `{"type":"user","message":{"content":"  <command-message>x"}}`, ""},
		{"not a tag", `{"type":"user","message":{"content":"<3 this"}}`, "<3 this"},
		{"comparison", `{"type":"user","message":{"content":"a<b"}}`, "a<b"},
		{"interrupted", `{"type":"user","message":{"content":"[Request interrupted by user]"}}`, ""},
		{"assistant", `{"type":"assistant","message":{"content":"x"}}`, ""},
		{"blank", `{"type":"user","message":{"content":"  \n "}}`, ""},
		{"exactly 200", `{"type":"user","message":{"content":"` + strings.Repeat("é", 200) + `"}}`, strings.Repeat("é", 200)},
		{"201", `{"type":"user","message":{"content":"` + strings.Repeat("é", 199) + ` xy"}}`, strings.Repeat("é", 199) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ll liteLine
			if err := json.Unmarshal([]byte(tc.line), &ll); err != nil {
				t.Fatal(err)
			}
			got, _ := promptOf(&ll)
			if got != tc.want {
				t.Errorf("promptOf = %q; want %q", got, tc.want)
			}
		})
	}
}

// benchHome builds 1,000 sessions over 10 projects with a spread of sizes
// like real use: most under 100 KB, some up to 1 MB, a few of several MB.
func benchHome(b *testing.B) (Home, int64) {
	b.Helper()
	home := Home{Dir: b.TempDir()}
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	for i := range 1000 {
		cwd := fmt.Sprintf("/home/user/proj%d", i%10)
		sid := fmt.Sprintf("%08x-1cb1-464f-a89e-ec36d073cc93", i)
		f := newFixture(sid, cwd, t0.Add(time.Duration(i)*time.Minute))
		var target int
		switch r := rng.Float64(); {
		case r < 0.65:
			target = 8<<10 + rng.IntN(92<<10)
		case r < 0.95:
			target = 150<<10 + rng.IntN(874<<10)
		default:
			target = 2<<20 + rng.IntN(3<<20)
		}
		for n := 0; f.buf.Len() < target; n++ {
			f.queued("q")
			f.prompt(fmt.Sprintf("task %d: refactor the parser and add tests", n))
			f.attachment()
			for k := range 1 + rng.IntN(4) {
				id := fmt.Sprintf("toolu_%d_%d", n, k)
				f.toolUse(id, "Read", map[string]string{"file_path": "/src/parser.go"})
				f.toolResult(id, strings.Repeat("42\tfunc parse(s string) (Node, error) {\n", 20+rng.IntN(200)))
			}
			f.say("I changed the parser; the tests pass.")
			f.lastPrompt(fmt.Sprintf("task %d: refactor the parser and add tests", n))
		}
		total += int64(f.buf.Len())
		f.write(b, filepath.Join(home.ProjectDir(cwd), sid+".jsonl"), t0.Add(time.Duration(i)*time.Minute))
	}
	runtime.GC() // not the listing's garbage
	return home, total
}

// BenchmarkList1000 lists 1,000 sessions (`cairn sessions list --all`).
// "cold" starts each listing without the message-count cache, so every
// file bigger than 128 KiB is read end to end once; "warm" has the cache of
// the previous listing, the steady state. cpu-ms/op is the CPU time of the
// process (all threads), steadier than wall time on a busy machine.
func BenchmarkList1000(b *testing.B) {
	home, total := benchHome(b)
	b.Logf("1000 sessions, %.0f MB", float64(total)/1e6)
	ctx := context.Background()
	list := func(b *testing.B) {
		infos, err := List(ctx, home, ListOptions{All: true})
		if err != nil || len(infos) != 1000 {
			b.Fatalf("List: %d sessions, %v", len(infos), err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			b.StopTimer()
			if err := os.Remove(home.countCachePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
				b.Fatal(err)
			}
			b.StartTimer()
			list(b)
		}
	})
	b.Run("warm", func(b *testing.B) {
		list(b)
		defer reportCPU(b)()
		for b.Loop() {
			list(b)
		}
	})
}

// reportCPU reports the process's CPU time per iteration when the returned
// function is called.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/1e6/float64(b.N), "cpu-ms/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestListLeavesOutSubagents: a session's subagent transcripts, in its
// sidecar folder's subagents/, are neither listed, nor the session
// --continue picks, nor searched.
func TestListLeavesOutSubagents(t *testing.T) {
	ctx := context.Background()
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	dir := home.ProjectDir(cwd)
	a := newFixture(sidA, cwd, t0)
	a.turn("main work")
	a.write(t, filepath.Join(dir, sidA+".jsonl"), t0.Add(time.Hour))
	side := newFixture(sidA, cwd, t0)
	side.prompt("subagent work")
	side.say("found it")
	writeFile(t, filepath.Join(dir, sidA, "subagents", "agent-1234abcd.jsonl"),
		bytes.ReplaceAll(side.buf.Bytes(), []byte(`"isSidechain":false`), []byte(`"isSidechain":true`)), t0.Add(2*time.Hour))

	for _, all := range []bool{false, true} {
		got, err := List(ctx, home, ListOptions{Cwd: cwd, All: all})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].SessionID != sidA || got[0].FirstPrompt != "main work" {
			t.Errorf("List(all=%v) = %+v; want only the session", all, got)
		}
	}
	if got, err := Latest(ctx, home, cwd); err != nil || got.SessionID != sidA {
		t.Errorf("Latest = %+v, %v; want the session", got, err)
	}
	if got, err := Search(ctx, home, SearchOptions{Cwd: cwd, Query: "subagent work"}); err != nil || len(got) != 0 {
		t.Errorf("Search found %+v, %v in a subagent's transcript", got, err)
	}
}

// TestListTitle: a name given with /rename (a custom-title record) is
// listed, the newest one winning, also when a last-prompt record comes
// after it.
func TestListTitle(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	cwd := "/home/user/proj"
	dir := home.ProjectDir(cwd)
	a := newFixture(sidA, cwd, t0)
	a.turn("fix the greeting")
	title := func(name string) {
		var o jsonw.Object
		o.Str("type", "custom-title")
		o.Str("customTitle", name)
		o.Str("sessionId", a.sid)
		a.line(&o)
	}
	title("first name")
	a.turn("now write CHANGES.md")
	title("greeting fix")
	a.turn("and the docs")
	a.write(t, filepath.Join(dir, sidA+".jsonl"), t0.Add(time.Hour))
	b := newFixture(sidB, cwd, t0)
	b.turn("untitled work")
	b.write(t, filepath.Join(dir, sidB+".jsonl"), t0.Add(2*time.Hour))

	infos, err := List(context.Background(), home, ListOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, in := range infos {
		got[in.SessionID] = in.Title
	}
	if diff := cmp.Diff(map[string]string{sidA: "greeting fix", sidB: ""}, got); diff != "" {
		t.Errorf("titles (-want +got):\n%s", diff)
	}
}
