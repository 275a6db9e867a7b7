package history

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var equateEmpty = cmpopts.EquateEmpty()

// clock returns a clock that starts at start and advances a second on
// every call.
func clock(start time.Time) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

var t0 = time.UnixMilli(1_761_000_000_000)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func writeAll(t *testing.T, home string, entries ...Entry) {
	t.Helper()
	w := NewWriter(home, clock(t0))
	for _, e := range entries {
		if err := w.Add(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("x", MaxInlinePaste+1)
	edge := strings.Repeat("y", MaxInlinePaste)
	// 513 runes outside the BMP are 1026 UTF-16 units: too long for
	// JavaScript, though only 513 characters for Go.
	emoji := strings.Repeat("😀", 513)
	tests := []struct {
		name   string
		in     Entry
		want   Entry
		cached []string // texts expected in the paste cache
	}{{
		name: "no pastes",
		in:   Entry{Display: "hello <world> & co", Project: "/p", SessionID: "s1"},
		want: Entry{Display: "hello <world> & co", Project: "/p", SessionID: "s1", Time: at(1)},
	}, {
		name: "inline paste",
		in: Entry{Display: "see [Pasted text #1 +1 lines]", Project: "/p", SessionID: "s1", Time: at(50),
			Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: "a\nb"}}},
		want: Entry{Display: "see [Pasted text #1 +1 lines]", Project: "/p", SessionID: "s1", Time: at(50),
			Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: "a\nb"}}},
	}, {
		name: "1024 characters stay inline",
		in: Entry{Display: "[Pasted text #3]", Project: "/p", SessionID: "s1",
			Pasted: map[int]Paste{3: {ID: 3, Type: TypeText, Content: edge}}},
		want: Entry{Display: "[Pasted text #3]", Project: "/p", SessionID: "s1", Time: at(1),
			Pasted: map[int]Paste{3: {ID: 3, Type: TypeText, Content: edge}}},
	}, {
		name: "long paste stored by hash",
		in: Entry{Display: "[Pasted text #2]", Project: "/p", SessionID: "s1",
			Pasted: map[int]Paste{2: {ID: 2, Type: TypeText, Content: long}}},
		want: Entry{Display: "[Pasted text #2]", Project: "/p", SessionID: "s1", Time: at(1),
			Pasted: map[int]Paste{2: {ID: 2, Type: TypeText, Content: long, ContentHash: HashPaste(long)}}},
		cached: []string{long},
	}, {
		name: "length counted in UTF-16 units",
		in: Entry{Display: "[Pasted text #1]", Project: "/p", SessionID: "s1",
			Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: emoji}}},
		want: Entry{Display: "[Pasted text #1]", Project: "/p", SessionID: "s1", Time: at(1),
			Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: emoji, ContentHash: HashPaste(emoji)}}},
		cached: []string{emoji},
	}, {
		name: "images are dropped",
		in: Entry{Display: "[Image #1] [Pasted text #2]", Project: "/p", SessionID: "s1",
			Pasted: map[int]Paste{
				1: {ID: 1, Type: TypeImage, Content: "aGVsbG8=", MediaType: "image/png"},
				2: {ID: 2, Type: TypeText, Content: "t", Filename: "notes.txt"},
			}},
		want: Entry{Display: "[Image #1] [Pasted text #2]", Project: "/p", SessionID: "s1", Time: at(1),
			Pasted: map[int]Paste{2: {ID: 2, Type: TypeText, Content: "t", Filename: "notes.txt"}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			writeAll(t, home, tt.in)
			got, err := Read(t.Context(), home, "/p", "s1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Entry{tt.want}, got, equateEmpty); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
			for _, text := range tt.cached {
				path := filepath.Join(home, "paste-cache", HashPaste(text)+".txt")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != text {
					t.Errorf("paste cache %s holds %d bytes, want %d", path, len(b), len(text))
				}
				checkMode(t, path)
			}
			checkMode(t, filepath.Join(home, "history.jsonl"))
		})
	}
}

func checkMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
}

func TestLineBytes(t *testing.T) {
	long := strings.Repeat("z", 2000)
	home := t.TempDir()
	writeAll(t, home, Entry{
		Display: "a <b> [Pasted text #10] [Pasted text #2 +1 lines]",
		Pasted: map[int]Paste{
			10: {ID: 10, Type: TypeText, Content: long},
			2:  {ID: 2, Type: TypeText, Content: "x\ny"},
		},
		Time:      time.UnixMilli(1761234567890),
		Project:   "/home/u/proj",
		SessionID: "0b6c1c2e-1111-4a4a-9b9b-123456789abc",
	})
	got, err := os.ReadFile(filepath.Join(home, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"display":"a <b> [Pasted text #10] [Pasted text #2 +1 lines]",` +
		`"pastedContents":{"2":{"id":2,"type":"text","content":"x\ny"},` +
		`"10":{"id":10,"type":"text","contentHash":"` + HashPaste(long) + `"}},` +
		`"timestamp":1761234567890,"project":"/home/u/proj","sessionId":"0b6c1c2e-1111-4a4a-9b9b-123456789abc"}` + "\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("history line (-want +got):\n%s", diff)
	}
}

func TestHashPaste(t *testing.T) {
	// sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e...
	if got, want := HashPaste("hello"), "2cf24dba5fb0a30e"; got != want {
		t.Errorf("HashPaste(hello) = %q, want %q", got, want)
	}
}

func TestReadOrder(t *testing.T) {
	e := func(sec int, project, session string) Entry {
		return Entry{Display: fmt.Sprintf("%s/%s/%d", project, session, sec), Project: project, SessionID: session, Time: at(sec)}
	}
	// Oldest first, as written.
	history := []Entry{
		e(1, "/p", "A"), e(2, "/p", "B"), e(3, "/q", "A"), e(4, "/p", "A"),
		e(5, "/p", "B"), e(6, "/q", "C"), e(7, "/p", "C"), e(8, "/p", "A"),
	}
	names := func(ids ...int) []string {
		var out []string
		for _, i := range ids {
			out = append(out, history[i-1].Display)
		}
		return out
	}
	tests := []struct {
		name             string
		project, session string
		limit            int
		want             []string
	}{
		{"current session first", "/p", "A", 0, names(8, 4, 1, 7, 5, 2)},
		{"other session", "/p", "B", 0, names(5, 2, 8, 7, 4, 1)},
		{"unknown session is newest first", "/p", "Z", 0, names(8, 7, 5, 4, 2, 1)},
		{"limit takes the newest, then orders", "/p", "A", 3, names(8, 7, 5)},
		{"limit 4", "/p", "A", 4, names(8, 4, 7, 5)},
		{"project filter", "/q", "C", 0, names(6, 3)},
		{"no such project", "/r", "A", 0, nil},
	}
	home := t.TempDir()
	writeAll(t, home, history...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(t.Context(), home, tt.project, tt.session, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var disp []string
			for _, e := range got {
				disp = append(disp, e.Display)
			}
			if diff := cmp.Diff(tt.want, disp); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadProjectMatchesExactly(t *testing.T) {
	projects := []string{"/p", "/p/sub", "/p2", `C:\work\"q"`, "/a<b>&c", "/café", "/x y", ""}
	home := t.TempDir()
	var entries []Entry
	for _, p := range projects {
		entries = append(entries, Entry{Display: "in " + p, Project: p, SessionID: "s"})
	}
	writeAll(t, home, entries...)
	for _, p := range projects {
		t.Run(p, func(t *testing.T) {
			got, err := Read(t.Context(), home, p, "s", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Display != "in "+p {
				t.Errorf("Read(%q) = %+v, want the one entry of that project", p, got)
			}
		})
	}
}

func TestReadDefaultLimit(t *testing.T) {
	home := t.TempDir()
	var entries []Entry
	for i := range 250 {
		entries = append(entries, Entry{Display: strconv.Itoa(i), Project: "/p", SessionID: "s"})
	}
	writeAll(t, home, entries...)
	got, err := Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultLimit || got[0].Display != "249" || got[99].Display != "150" {
		t.Errorf("Read returned %d entries from %q to %q, want 100 from \"249\" to \"150\"",
			len(got), got[0].Display, got[len(got)-1].Display)
	}
}

func TestReadMissingFile(t *testing.T) {
	got, err := Read(t.Context(), t.TempDir(), "/p", "s", 0)
	if err != nil || got != nil {
		t.Errorf("Read of no history = %v, %v; want nil, nil", got, err)
	}
}

func TestReadSkipsInvalidLines(t *testing.T) {
	valid := func(d string) string {
		return `{"display":"` + d + `","pastedContents":{},"timestamp":1761000000000,"project":"/p","sessionId":"s"}`
	}
	file := strings.Join([]string{
		valid("one"),
		"garbage",
		"",
		"\x00\x00\x00\x00",
		`{"display":"no project","timestamp":1}`,
		`{"display":"null project","project":null}`,
		`{"display":"bad paste","pastedContents":{"x":{"id":1},"1":{"id":"one"},"2":{"id":2,"type":"text","content":"ok"}},"project":"/p","sessionId":"s"}`,
		`[1,2,3]`,
		"\x00\x00" + valid("after nulls"),
		valid("two") + "\r",
		`{"display":"torn","pastedCon`,
	}, "\n")
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "history.jsonl"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1761000000000)
	want := []Entry{
		{Display: "two", Time: ts, Project: "/p", SessionID: "s"},
		{Display: "after nulls", Time: ts, Project: "/p", SessionID: "s"},
		{Display: "bad paste", Project: "/p", SessionID: "s", Pasted: map[int]Paste{2: {ID: 2, Type: TypeText, Content: "ok"}}},
		{Display: "one", Time: ts, Project: "/p", SessionID: "s"},
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
}

func TestTornLastLine(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "history.jsonl")
	writeAll(t, home, Entry{Display: "before", Project: "/p", SessionID: "s"})
	// A crash cut the next append short.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"display":"half","pastedContents":{},"timest`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	got, err := Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Display != "before" {
		t.Fatalf("Read with a torn tail = %+v, want only \"before\"", got)
	}

	writeAll(t, home, Entry{Display: "after", Project: "/p", SessionID: "s"})
	got, err = Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	var disp []string
	for _, e := range got {
		disp = append(disp, e.Display)
	}
	if diff := cmp.Diff([]string{"after", "before"}, disp); diff != "" {
		t.Errorf("Read after appending past a torn line (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"display":"after"`) {
		t.Errorf("file after the append:\n%s\nwant the new entry on a line of its own", b)
	}
}

func TestMissingPasteFileIsLeftOut(t *testing.T) {
	long := strings.Repeat("q", 5000)
	home := t.TempDir()
	writeAll(t, home, Entry{
		Display: "[Pasted text #1] [Pasted text #2]", Project: "/p", SessionID: "s",
		Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: long}, 2: {ID: 2, Type: TypeText, Content: "short"}},
	})
	if err := os.Remove(filepath.Join(home, "paste-cache", HashPaste(long)+".txt")); err != nil {
		t.Fatal(err)
	}
	got, err := Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Paste{2: {ID: 2, Type: TypeText, Content: "short"}}
	if len(got) != 1 {
		t.Fatalf("Read returned %d entries, want 1", len(got))
	}
	if diff := cmp.Diff(want, got[0].Pasted); diff != "" {
		t.Errorf("pastes (-want +got):\n%s", diff)
	}
}

func TestPasteHashCannotEscapeCache(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "secret.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	line := `{"display":"x","pastedContents":{"1":{"id":1,"type":"text","contentHash":"../secret"}},"timestamp":1,"project":"/p","sessionId":"s"}` + "\n"
	if err := os.WriteFile(filepath.Join(home, "history.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(t.Context(), home, "/p", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Pasted) != 0 {
		t.Errorf("Read = %+v, want the entry without its paste", got)
	}
}

// TestClaudeCodeLine reads lines as Claude Code writes them, built by hand
// from what it is known to write.
func TestClaudeCodeLine(t *testing.T) {
	big := strings.Repeat("line of a log\n", 200)
	hash := HashPaste(big)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "paste-cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "paste-cache", hash+".txt"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := `{"display":"why does this fail? [Pasted text #1 +200 lines] see [Pasted text #2 +2 lines] and [Image #3]","pastedContents":{"1":{"id":1,"type":"text","contentHash":"` + hash + `"},"2":{"id":2,"type":"text","content":"a\nb\nc"}},"timestamp":1761234567890,"project":"/Users/dev/app","sessionId":"7f1d2c3b-aaaa-4bbb-8ccc-0123456789ab"}
{"display":"/model","pastedContents":{},"timestamp":1761234599001,"project":"/Users/dev/app","sessionId":"7f1d2c3b-aaaa-4bbb-8ccc-0123456789ab"}
`
	if err := os.WriteFile(filepath.Join(home, "history.jsonl"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Read(t.Context(), home, "/Users/dev/app", "other", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{
		Display:   "/model",
		Time:      time.UnixMilli(1761234599001),
		Project:   "/Users/dev/app",
		SessionID: "7f1d2c3b-aaaa-4bbb-8ccc-0123456789ab",
	}, {
		Display: "why does this fail? [Pasted text #1 +200 lines] see [Pasted text #2 +2 lines] and [Image #3]",
		Pasted: map[int]Paste{
			1: {ID: 1, Type: TypeText, Content: big, ContentHash: hash},
			2: {ID: 2, Type: TypeText, Content: "a\nb\nc"},
		},
		Time:      time.UnixMilli(1761234567890),
		Project:   "/Users/dev/app",
		SessionID: "7f1d2c3b-aaaa-4bbb-8ccc-0123456789ab",
	}}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Fatalf("Read (-want +got):\n%s", diff)
	}
	if got, want := ExpandPastes(got[1].Display, got[1].Pasted), "why does this fail? "+big+" see a\nb\nc and [Image #3]"; got != want {
		t.Errorf("ExpandPastes = %q, want %q", got, want)
	}
	// Written back by cairn, the first line has the same bytes.
	first := got[1]
	first.Pasted[1] = Paste{ID: 1, Type: TypeText, ContentHash: hash}
	if diff := cmp.Diff(strings.SplitAfter(lines, "\n")[0], string(appendLine(nil, first))); diff != "" {
		t.Errorf("re-encoded line (-Claude Code +cairn):\n%s", diff)
	}
}

func TestExpandPastes(t *testing.T) {
	pasted := map[int]Paste{
		1:  {ID: 1, Type: TypeText, Content: "one"},
		2:  {ID: 2, Type: TypeText, Content: "two\nlines\n"},
		3:  {ID: 3, Type: TypeImage, MediaType: "image/png"},
		4:  {ID: 4, Type: TypeText, ContentHash: "abcdef0123456789"}, // unresolved
		5:  {ID: 5, Type: TypeText, Content: "[Pasted text #1]"},
		12: {ID: 12, Type: TypeText, Content: "twelve"},
	}
	tests := []struct {
		name, in, want string
	}{
		{"plain", "no placeholders", "no placeholders"},
		{"short form", "a [Pasted text #1] b", "a one b"},
		{"lines form", "[Pasted text #2 +2 lines]!", "two\nlines\n!"},
		{"two digits", "[Pasted text #12]", "twelve"},
		{"repeated", "[Pasted text #1][Pasted text #1]", "oneone"},
		{"unknown id kept", "[Pasted text #9]", "[Pasted text #9]"},
		{"image kept", "[Image #3] [Pasted text #3]", "[Image #3] [Pasted text #3]"},
		{"unresolved hash kept", "[Pasted text #4 +80 lines]", "[Pasted text #4 +80 lines]"},
		{"no re-expansion", "[Pasted text #5]", "[Pasted text #1]"},
		{"malformed kept", "[Pasted text #1 +x lines] [Pasted text 1]", "[Pasted text #1 +x lines] [Pasted text 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpandPastes(tt.in, pasted); got != tt.want {
				t.Errorf("ExpandPastes(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	tests := []struct {
		id   int
		text string
		want string
	}{
		{1, "one line", "[Pasted text #1]"},
		{2, "a\nb\nc", "[Pasted text #2 +2 lines]"},
		{3, "a\n", "[Pasted text #3 +1 lines]"},
	}
	for _, tt := range tests {
		got := Placeholder(tt.id, tt.text)
		if got != tt.want {
			t.Errorf("Placeholder(%d, %q) = %q, want %q", tt.id, tt.text, got, tt.want)
		}
		p := map[int]Paste{tt.id: {ID: tt.id, Type: TypeText, Content: tt.text}}
		if back := ExpandPastes(got, p); back != tt.text {
			t.Errorf("ExpandPastes(%q) = %q, want %q", got, back, tt.text)
		}
	}
}

func TestWriterBuffers(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "history.jsonl")
	w := NewWriter(home, clock(t0))
	add := func(d string) {
		t.Helper()
		if err := w.Add(t.Context(), Entry{Display: d, Project: "/p", SessionID: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	add("one")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("history exists before a flush (err %v)", err)
	}
	// The writer's own Read sees what it has buffered.
	got, err := w.Read(t.Context(), "/p", "s", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("Writer.Read = %d entries, %v; want 1", len(got), err)
	}

	w.bufSize = 1 // every line fills the buffer
	add("two")
	if n := countLines(t, path); n != 2 {
		t.Errorf("after a full buffer the file has %d lines, want 2", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(t.Context(), Entry{Display: "late", Project: "/p"}); err != ErrClosed {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestAddCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w := NewWriter(t.TempDir(), clock(t0))
	if err := w.Add(ctx, Entry{Display: "x", Project: "/p"}); err != context.Canceled {
		t.Errorf("Add with a cancelled ctx = %v, want context.Canceled", err)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// checkWholeLines reads the history forwards and checks that every line is
// an entry, and that each writer's entries ("<writer> <n>") are all there,
// in order.
func checkWholeLines(t *testing.T, path string, writers []string, per int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		e, ok := decodeLine(sc.Bytes())
		if !ok {
			t.Fatalf("line %q is not a whole entry", sc.Text())
		}
		who, n, _ := strings.Cut(e.Display, " ")
		if want := strconv.Itoa(next[who]); n != want {
			t.Fatalf("writer %s: entry %s, want %s", who, n, want)
		}
		next[who]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, who := range writers {
		if next[who] != per {
			t.Errorf("writer %s: %d entries, want %d", who, next[who], per)
		}
	}
}

func TestConcurrentWriters(t *testing.T) {
	const per = 300
	home := t.TempDir()
	var writers []*Writer
	for range 2 {
		w := NewWriter(home, clock(t0))
		w.bufSize = 700 // a flush every few lines
		writers = append(writers, w)
	}
	pad := strings.Repeat("p", 150)
	var names []string
	var wg sync.WaitGroup
	for wi, w := range writers {
		for g := range 2 {
			name := fmt.Sprintf("w%dg%d", wi, g)
			names = append(names, name)
			wg.Go(func() {
				for i := range per {
					e := Entry{Display: fmt.Sprintf("%s %d", name, i), Project: "/p", SessionID: name,
						Pasted: map[int]Paste{1: {ID: 1, Type: TypeText, Content: pad}}}
					if err := w.Add(t.Context(), e); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, w := range writers {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checkWholeLines(t, filepath.Join(home, "history.jsonl"), names, per)
}

const helperHomeEnv = "CAIRN_HISTORY_HELPER_HOME"

// TestHelperProcess is the other process of TestCrossProcess: it appends
// one entry, says "ready" on stdout, and appends the rest.
func TestHelperProcess(t *testing.T) {
	home := os.Getenv(helperHomeEnv)
	if home == "" {
		t.Skip("runs only as TestCrossProcess's child")
	}
	appendMany(t, home, "child", crossEntries, func() { fmt.Println("ready") })
}

const crossEntries = 2000

// appendMany adds n entries named "<name> <i>", a few lines per flush,
// and calls started after the first is written.
func appendMany(t *testing.T, home, name string, n int, started func()) {
	w := NewWriter(home, clock(t0))
	w.bufSize = 256
	for i := range n {
		if err := w.Add(context.Background(), Entry{Display: fmt.Sprintf("%s %d", name, i), Project: "/p", SessionID: name}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			started()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperHomeEnv+"="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Start once the child is writing, so that the two overlap.
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("child process said %q (%v), want ready\n%s", line, err, stderr.Bytes())
	}
	appendMany(t, home, "parent", crossEntries, func() {})
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child process: %v\n%s%s", err, rest, stderr.Bytes())
	}
	checkWholeLines(t, filepath.Join(home, "history.jsonl"), []string{"parent", "child"}, crossEntries)
}

// synthetic is a large history that exists only as arithmetic: count
// lines of another project's entry, then lines of the project asked for.
// It counts the bytes read from it.
type synthetic struct {
	other, mine []byte // lines of equal length, newline included
	total, tail int64  // lines in all, of which the last tail are mine
	read        int64
}

func (s *synthetic) size() int64 { return s.total * int64(len(s.other)) }

func (s *synthetic) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	l := int64(len(s.other))
	for n < len(p) && off < s.size() {
		i, j := off/l, off%l
		line := s.other
		if i >= s.total-s.tail {
			line = s.mine
		}
		c := copy(p[n:], line[j:])
		n += c
		off += int64(c)
	}
	s.read += int64(n)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func newSynthetic(size int64, tail int64) *synthetic {
	mk := func(project string) []byte {
		return appendLine(nil, Entry{Display: "make the tests pass", Time: t0, Project: project, SessionID: "0b6c1c2e-1111-4a4a-9b9b-123456789abc"})
	}
	other, mine := mk("/home/u/other"), mk("/home/u/mine1")
	if len(other) != len(mine) {
		panic("synthetic lines must have one length")
	}
	return &synthetic{other: other, mine: mine, total: size / int64(len(other)), tail: tail}
}

// TestReadIsBounded reads the newest entries of a 50 MB history and checks
// that only the blocks holding them were read.
func TestReadIsBounded(t *testing.T) {
	s := newSynthetic(50<<20, 500)
	got, err := latest(t.Context(), s, s.size(), "/home/u/mine1", "x", DefaultLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultLimit {
		t.Fatalf("latest returned %d entries, want %d", len(got), DefaultLimit)
	}
	need := int64(DefaultLimit * len(s.mine))
	if limit := need + 2*blockSize; s.read > limit {
		t.Errorf("read %d bytes of %d for %d entries; want at most %d", s.read, s.size(), DefaultLimit, limit)
	}
}

// writeBig writes a history of about size bytes in which every fourth
// line belongs to /proj/3, and returns its home.
func writeBig(tb testing.TB, size int) string {
	tb.Helper()
	home := tb.TempDir()
	var buf []byte
	pad := strings.Repeat("lorem ipsum ", 10)
	for i := 0; len(buf) < size; i++ {
		buf = appendLine(buf, Entry{
			Display:   fmt.Sprintf("prompt %d %s", i, pad),
			Pasted:    map[int]Paste{1: {ID: 1, Type: TypeText, Content: "some pasted text"}},
			Time:      at(i),
			Project:   fmt.Sprintf("/proj/%d", i%4),
			SessionID: fmt.Sprintf("session-%d", i/1000),
		})
	}
	if err := os.WriteFile(filepath.Join(home, "history.jsonl"), buf, 0o600); err != nil {
		tb.Fatal(err)
	}
	return home
}

// BenchmarkReadLatest reads up-arrow's 100 entries from a 50 MB history.
func BenchmarkReadLatest(b *testing.B) {
	home := writeBig(b, 50<<20)
	b.ReportAllocs()
	for b.Loop() {
		got, err := Read(b.Context(), home, "/proj/3", "session-1", 0)
		if err != nil || len(got) != DefaultLimit {
			b.Fatalf("Read = %d entries, %v", len(got), err)
		}
	}
}

// BenchmarkReadAbsentProject is the worst case: a project with no
// entries, so the whole 50 MB file is scanned; memory stays bounded.
func BenchmarkReadAbsentProject(b *testing.B) {
	home := writeBig(b, 50<<20)
	b.SetBytes(50 << 20)
	b.ReportAllocs()
	for b.Loop() {
		got, err := Read(b.Context(), home, "/nowhere", "session-1", 0)
		if err != nil || len(got) != 0 {
			b.Fatalf("Read = %d entries, %v", len(got), err)
		}
	}
}
