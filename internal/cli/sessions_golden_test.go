package cli_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/bench/gen"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/sessions-golden.txt from the commands' output (only when the output is meant to change)")

// goldenProject is the folder the golden session's project keeps its
// transcripts in, under the home's projects/.
const goldenProject = "-home-user-acme-api"

// goldenTranscript is a generated session with what the reading commands
// must get right: compactions with preserved messages, attachments (a
// file re-read among them), images, tool results of each shape (a string,
// a list of blocks with an image, an error), thinking, a slash command,
// harness text, tool inputs with escapes and nested values, text whose
// letters are escaped, a line of garbage in the middle and a torn last
// line.
func goldenTranscript(t *testing.T) (data []byte, id string) {
	t.Helper()
	var buf bytes.Buffer
	st, err := gen.Generate(&buf, gen.Options{Size: 600 << 10, Seed: 13, CompactEvery: 120 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if st.Compactions < 2 {
		t.Fatalf("the golden session has %d compactions, want at least 2", st.Compactions)
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	lines = lines[:len(lines)-1] // the empty piece after the last newline
	var out bytes.Buffer
	for i, l := range lines {
		out.Write(l)
		if i == len(lines)/2 {
			out.WriteString("}{ garbage: \x01 not JSON ]\n")
		}
	}
	id = st.SessionID
	parent := st.Leaf
	n := 0
	line := func(typ, body string) {
		n++
		uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		fmt.Fprintf(&out, `{"parentUuid":%q,"isSidechain":false,"type":%q,%s,"uuid":%q,"timestamp":"2026-01-12T12:00:%02d.000Z","cwd":"/home/user/acme-api","sessionId":%q,"version":"2.1.197"}`+"\n",
			parent, typ, body, uuid, n, id)
		parent = uuid
	}
	line("user", `"message":{"role":"user","content":"<command-name>/review</command-name>\n<command-args>the Z\u00e9bra branch</command-args>"}`)
	line("user", `"message":{"role":"user","content":"<local-command-stdout>Reviewed: 3 files</local-command-stdout>"}`)
	line("user", `"isMeta":true,"message":{"role":"user","content":"<system-reminder>Caveat: harness text about the zebra</system-reminder>"}`)
	line("user", `"message":{"role":"user","content":"Please look at caf\u00e9.go and the hello \u0077orld output — Ünïcødé naïve text"}`)
	line("assistant", `"message":{"id":"msg_golden1","type":"message","role":"assistant","model":"claude-opus-4-5-20251101","content":[{"type":"thinking","thinking":"The zebra case needs `+"```"+`fences`+"```"+` kept","signature":"c2ln"},{"type":"text","text":"I will run it.\n\nTwo lines."}],"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30000,"output_tokens":40}}`)
	line("assistant", `"message":{"id":"msg_golden1","type":"message","role":"assistant","model":"claude-opus-4-5-20251101","content":[{"type":"tool_use","id":"toolu_golden1","name":"Bash","input":{"command":"echo caf\u00e9 > src\/main.go","opts":["x",{"deep":"QUAGGA-in-input","n":3}],"description":"Write"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":40}}`)
	line("user", `"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_golden1","is_error":true,"content":[{"type":"text","text":"permission denied: src/main.go needle"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]},"toolUseResult":"Error: permission denied"`)
	line("attachment", `"attachment":{"type":"file","filename":"/home/user/acme-api/src/a.go","displayPath":"src/a.go","content":{"type":"text","file":{"filePath":"/home/user/acme-api/src/a.go","content":"package a // needle"}}}`)
	line("user", `"message":{"role":"user","content":[{"type":"text","text":"And this screenshot:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`)
	line("assistant", `"message":{"id":"msg_golden2","type":"message","role":"assistant","model":"claude-opus-4-5-20251101","content":[{"type":"text","text":"Done \u2014 the needle is in \"src/a.go\" <b>&amp;</b>."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":40}}`)
	out.WriteString(`{"parentUuid":"` + parent + `","isSidechain":false,"type":"user","message":{"role":"user","content":"cut off`)
	return out.Bytes(), id
}

// goldenHomeLen is the length of the golden home's path.
const goldenHomeLen = 120

// installGolden writes the golden session, and the Claude Code sample as
// an older second session, into a new home.
func installGolden(t *testing.T) (home, id string) {
	t.Helper()
	data, id := goldenTranscript(t)
	// The home's path is part of what `context` weighs (the memory
	// section names the memory folder), so it is padded to one length:
	// t.TempDir's varies with its random part (one run in forty gave a
	// memory of 597 tokens, not 598) and with TMPDIR.
	base := t.TempDir()
	if len(base)+2 > goldenHomeLen {
		t.Skipf("the temporary folder %s is too long for the golden home's fixed length (%d)", base, goldenHomeLen)
	}
	home = filepath.Join(base, strings.Repeat("h", goldenHomeLen-len(base)-1))
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "projects", goldenProject)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []struct {
		name string
		data []byte
	}{{"0ce29c1b-1cb1-464f-a89e-ec36d073cc93.jsonl", sample}, {id + ".jsonl", data}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 12+i, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return home, id
}

// TestReadingCommandsGolden checks that the commands that read a session
// print, byte for byte, what they printed before they were made faster:
// testdata/sessions-golden.txt holds the SHA-256 and length of each
// command's stdout and stderr on the golden session. When an output is
// meant to change, rewrite it with -update-golden and say why in the
// commit.
func TestReadingCommandsGolden(t *testing.T) {
	home, id := installGolden(t)
	cwd := "/home/user/acme-api"
	cmds := [][]string{
		{"sessions", "show", id},
		{"sessions", "show", "--json", id},
		{"sessions", "export", id},
		{"sessions", "export", "--format", "json", id},
		{"context", id},
		{"context", "--json", id},
	}
	for _, q := range []string{"schema", "SCHEMA", "needle", "zebra", "Zébra", "café", "src/main", "world", "quagga-in-input",
		"Ünïcødé", "NAÏVE", "review", "the", "no such text anywhere", `"src/a.go"`, "<b>", "reviewed: 3"} {
		cmds = append(cmds, []string{"sessions", "search", q}, []string{"sessions", "search", "--json", q})
	}
	var got strings.Builder
	for _, c := range cmds {
		code, stdout, stderr := run(t, home, cwd, c...)
		// Paths name the temporary home.
		stdout, stderr = strings.ReplaceAll(stdout, home, "HOME"), strings.ReplaceAll(stderr, home, "HOME")
		fmt.Fprintf(&got, "%s\texit %d\tstdout %s\tstderr %s\n", strings.Join(c[:len(c)-1], " ")+" "+label(c[len(c)-1], id), code, digest(stdout), digest(stderr))
	}
	path := filepath.Join("testdata", "sessions-golden.txt")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
	if len(wantLines) != len(gotLines) {
		t.Fatalf("%d outputs, want %d", len(gotLines), len(wantLines))
	}
	for i := range wantLines {
		if wantLines[i] != gotLines[i] {
			t.Errorf("output changed:\n got %s\nwant %s", gotLines[i], wantLines[i])
		}
	}
}

func label(arg, id string) string {
	if arg == id {
		return "ID"
	}
	return fmt.Sprintf("%q", arg)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%d:%s", len(s), hex.EncodeToString(sum[:8]))
}
