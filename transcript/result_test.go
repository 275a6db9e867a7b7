package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/transcript"
)

// bigResult is a toolUseResult larger than transcript.ResultKeep, with an
// escape and non-ASCII text inside, as a file read gives.
func bigResult() string {
	body := strings.Repeat(`line of the file \"quoted\" é\n`, 2*transcript.ResultKeep/20)
	return `{"type":"text","file":{"filePath":"/p/a.go","content":"` + body + `","numLines":80},"Plan":null}`
}

// resultSession writes a session whose tool result is bigResult, with
// members cairn has no field for on the result's line, and returns its
// path.
func resultSession(t *testing.T) string {
	t.Helper()
	lines := []string{
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"read a.go"},"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s"}`,
		`{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/a.go"}}]},"uuid":"a1","timestamp":"2026-01-01T00:00:01.000Z","sessionId":"s"}`,
		`{"parentUuid":"a1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"uuid":"r1","toolUseResult":` + bigResult() + `,"futureField":{"x":[1,2,"ü"]},"zeta":"z\u00e9","timestamp":"2026-01-01T00:00:02.000Z","sessionId":"s"}`,
		`{"parentUuid":"r1","isSidechain":false,"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]},"uuid":"a2","timestamp":"2026-01-01T00:00:03.000Z","sessionId":"s"}`,
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadPath loads the session at path and closes its source.
func loadPath(t testing.TB, path string) *transcript.Conversation {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

func resultEntry(t *testing.T, conv *transcript.Conversation) *transcript.Entry {
	t.Helper()
	for i := range conv.Entries {
		if conv.Entries[i].UUID == "r1" {
			return conv.Entries[i]
		}
	}
	t.Fatal("no entry r1")
	return nil
}

// TestResultLeftInFile: a large toolUseResult of a file's entry stays in
// the file; ResultHasKey answers without it, Result and MarshalJSON read
// it back byte for byte, and the members cairn does not know survive.
func TestResultLeftInFile(t *testing.T) {
	path := resultSession(t)
	conv := loadPath(t, path) // the source is closed now
	e := resultEntry(t, conv)
	if e.ToolUseResult != nil {
		t.Errorf("ToolUseResult holds %d bytes; a result over %d bytes should stay in the file", len(e.ToolUseResult), transcript.ResultKeep)
	}
	if !e.HasResult() {
		t.Error("HasResult = false")
	}
	for key, want := range map[string]bool{"file": true, "TYPE": true, "plan": true, "filePath": false, "content": false} {
		if got := e.ResultHasKey(key); got != want {
			t.Errorf("ResultHasKey(%q) = %v, want %v", key, got, want)
		}
	}
	got, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != bigResult() {
		t.Errorf("Result gave %.80s…, want the result as the file has it", got)
	}
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"toolUseResult":`+bigResult())) {
		t.Errorf("MarshalJSON lost the result: %.200s", line)
	}
	unknown := e.Unknown()
	if string(unknown["futureField"]) != `{"x":[1,2,"ü"]}` || string(unknown["zeta"]) != `"z\u00e9"` || len(unknown) != 2 {
		t.Errorf("Unknown() = %q", unknown)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if string(back["futureField"]) != `{"x":[1,2,"ü"]}` {
		t.Errorf("the re-encoded line has futureField %s", back["futureField"])
	}
	// A small result stays in memory, as a source that cannot be opened
	// again keeps every result.
	data, _ := os.ReadFile(path)
	mem, err := transcript.Load(context.Background(), transcript.BytesSource(data), transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := resultEntry(t, mem); string(m.ToolUseResult) != bigResult() {
		t.Errorf("loaded from bytes, ToolUseResult is %.80s…", m.ToolUseResult)
	} else if mine, _ := m.MarshalJSON(); !bytes.Equal(mine, line) {
		t.Errorf("the line re-encoded from bytes differs from the one from the file:\n%s\n%s", mine, line)
	}
}

// TestResultFileReplaced: once the file a result was left in is replaced
// (or changed where the result was), reading it back fails with an error
// that says so, and so does re-encoding the entry.
func TestResultFileReplaced(t *testing.T) {
	path := resultSession(t)
	conv := loadPath(t, path)
	e := resultEntry(t, conv)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes in another file put in its place.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Result(); !errors.Is(err, fsfault.ErrReplaced) || !strings.Contains(err.Error(), "r1") {
		t.Errorf("Result after the file was replaced: %v; want an error naming the entry and wrapping ErrReplaced", err)
	}
	if _, err := e.MarshalJSON(); !errors.Is(err, fsfault.ErrReplaced) {
		t.Errorf("MarshalJSON after the file was replaced: %v", err)
	}
	// Loaded again, then changed in place where the result is.
	e = resultEntry(t, loadPath(t, path))
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(bytes.Index(data, []byte("line of the file")))
	if _, err := f.WriteAt([]byte("LINE"), at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := e.Result(); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("Result after the file changed in place: %v", err)
	}
	// Removed.
	os.Remove(path)
	if _, err := e.Result(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Result after the file was removed: %v", err)
	}
}

// TestEntryKeepsNoLine: an entry keeps copies of what it holds: the line
// it was decoded from can change afterwards without changing the entry,
// its unknown members included.
func TestEntryKeepsNoLine(t *testing.T) {
	line := []byte(`{"type":"user","uuid":"u1","parentUuid":"p","cwd":"/wörk","message":{"role":"user","content":"hi"},"toolUseResult":{"plan":"x"},"newThing":[1,{"a":"b"}],"other":"v"}`)
	e, err := transcript.DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'X'
	}
	got, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("after the line changed:\n%s\nwant\n%s", got, want)
	}
	if u := e.Unknown(); string(u["newThing"]) != `[1,{"a":"b"}]` || string(u["other"]) != `"v"` {
		t.Errorf("Unknown() = %q", u)
	}
	if e.UUID != "u1" || e.ParentUUID != "p" || e.CWD != "/wörk" || !e.ResultHasKey("plan") {
		t.Errorf("fields after the line changed: %+v", e)
	}
	if m, ok, err := e.DecodeMessage(); !ok || err != nil || m.Content[0].Text != "hi" {
		t.Errorf("message after the line changed: %+v %v %v", m, ok, err)
	}
}

// TestResultLeftInFileAfterDamage: a result line that starts after null
// bytes a crash left (or white space) is found where it is in the file.
func TestResultLeftInFileAfterDamage(t *testing.T) {
	for _, lead := range []string{"\x00\x00\x00", "   \t", "\x00 {\"garbage\x00"} {
		path := resultSession(t)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(data, []byte(`{"parentUuid":"a1"`))
		data = append(data[:at:at], append([]byte(lead), data[at:]...)...)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		conv := loadPath(t, path)
		if strings.Contains(lead, "\x00") != (len(conv.Warnings) == 1) {
			t.Errorf("lead %q: warnings %q", lead, conv.Warnings)
		}
		e := resultEntry(t, conv)
		if e.ToolUseResult != nil {
			t.Fatalf("lead %q: the result was kept in memory", lead)
		}
		if got, err := e.Result(); err != nil || string(got) != bigResult() {
			t.Errorf("lead %q: Result gave %.80q, %v", lead, got, err)
		}
	}
}
