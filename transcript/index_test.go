package transcript_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/transcript"
)

// indexOf indexes b, failing the test on an error.
func indexOf(t testing.TB, b []byte) *transcript.Index {
	t.Helper()
	x, err := transcript.NewIndex(context.Background(), bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("NewIndex: %v", err)
	}
	return x
}

var warnedLine = regexp.MustCompile(`^line (\d+) \(byte \d+\)`)

// warnedLines returns the line numbers warnings name, sorted.
func warnedLines(warns []string) []int {
	var out []int
	for _, w := range warns {
		if m := warnedLine.FindStringSubmatch(w); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkAgainstLoad checks the index of b against Load's conversation: the
// index's chain is Load's entries but for those Load puts back off the
// chain (parallel tool results and other lines of a response), in the same
// order; the lines either warns about are the same from the chain's first
// line on (Load reads no further back); the chain warnings are the same.
func checkAgainstLoad(t *testing.T, b []byte) {
	t.Helper()
	x := indexOf(t, b)
	chain, chainWarns, err := x.Chain("")
	if err != nil {
		t.Fatalf("Chain: %v", err)
	}
	conv, err := transcript.Load(context.Background(), transcript.BytesSource(b), transcript.LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	in := make(map[string]bool)
	for _, i := range chain {
		got = append(got, x.Lines[i].UUID)
		in[x.Lines[i].UUID] = true
	}
	var want []string
	for _, e := range conv.Entries {
		if in[e.UUID] {
			want = append(want, e.UUID)
			continue
		}
		// Put back by Load: it hangs off the chain or off another line put
		// back, and is a tool result or an assistant line.
		if e.Type != transcript.TypeUser && e.Type != transcript.TypeAssistant {
			t.Errorf("Load has %s line %s the index's chain does not", e.Type, e.UUID)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index chain differs from Load's (-Load +index):\n%s", diff)
	}
	if len(got) > 0 && conv.Leaf != got[len(got)-1] {
		t.Errorf("index leaf %s, Load's %s", got[len(got)-1], conv.Leaf)
	}
	from := 0
	if len(chain) > 0 {
		from = chain[0] + 1
	}
	var idxLines []int
	for _, n := range warnedLines(x.Warnings) {
		if n >= from {
			idxLines = append(idxLines, n)
		}
	}
	var loadLines []int
	for _, n := range warnedLines(conv.Warnings) {
		if n >= from {
			loadLines = append(loadLines, n)
		}
	}
	if diff := cmp.Diff(loadLines, idxLines); diff != "" {
		t.Errorf("lines warned about differ (-Load +index):\n%s\nLoad: %q\nindex: %q", diff, conv.Warnings, x.Warnings)
	}
	for _, w := range chainWarns {
		if !slices.Contains(conv.Warnings, w) {
			t.Errorf("index warned %q, Load did not: %q", w, conv.Warnings)
		}
	}
	for _, w := range conv.Warnings {
		if strings.HasPrefix(w, "entry ") && !slices.Contains(chainWarns, w) {
			t.Errorf("Load warned %q, the index did not: %q", w, chainWarns)
		}
	}
	// Each line reads back as the file has it.
	var buf []byte
	for _, i := range []int{0, len(x.Lines) / 2, len(x.Lines) - 1} {
		if i < 0 || i >= len(x.Lines) {
			continue
		}
		l := x.Lines[i]
		buf, err = x.ReadLine(i, buf)
		if err != nil {
			t.Fatalf("ReadLine(%d): %v", i, err)
		}
		if !bytes.Equal(buf, b[l.Offset:l.Offset+int64(l.Length)]) {
			t.Errorf("ReadLine(%d) = %.40q, the file has %.40q", i, buf, b[l.Offset:])
		}
	}
}

func TestIndexAgreesWithLoad(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"Claude Code 2.1.197, compacted": real}
	for name, opts := range map[string]gen.Options{
		"no compaction": {Size: 400 << 10, Seed: 23},
		"other seed":    {Size: 300 << 10, Seed: 7},
		"compacting":    {Size: 600 << 10, Seed: 21, CompactEvery: 120 << 10},
	} {
		var buf bytes.Buffer
		if _, err := gen.Generate(&buf, opts); err != nil {
			t.Fatal(err)
		}
		files[name] = buf.Bytes()
	}
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			checkAgainstLoad(t, b)
			conv, err := transcript.Load(context.Background(), transcript.BytesSource(b), transcript.LoadOptions{NoRepair: true})
			if err != nil {
				t.Fatal(err)
			}
			if x := indexOf(t, b); x.SessionID != conv.SessionID || x.SessionID == "" {
				t.Errorf("index session %q, Load's %q", x.SessionID, conv.SessionID)
			}
		})
	}
}

// TestIndexDamage indexes a generated file with a garbage line, a 20 MB
// line that is not an entry and a torn last line: each is named, the chain
// is whole, and the lines around the damage are kept.
func TestIndexDamage(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Generate(&buf, gen.Options{Size: 300 << 10, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	clean := buf.Bytes()
	n := bytes.Count(clean, []byte("\n"))
	b := gen.Damage(clean)
	x := indexOf(t, b)
	want := []int{n/2 + 2, n*3/4 + 3, n + 3}
	if diff := cmp.Diff(want, warnedLines(x.Warnings)); diff != "" {
		t.Errorf("bad lines (-want +got):\n%s\n%q", diff, x.Warnings)
	}
	if got := len(x.Lines); got != n+3 {
		t.Errorf("%d lines indexed, want %d", got, n+3)
	}
	if !strings.Contains(x.Warnings[2], "incomplete last line") {
		t.Errorf("last warning %q, want it to say the line is incomplete", x.Warnings[2])
	}
	cleanChain, _, _ := indexOf(t, clean).Chain("")
	chain, _, _ := x.Chain("")
	if len(chain) != len(cleanChain) {
		t.Errorf("chain of %d lines with the damage, %d without", len(chain), len(cleanChain))
	}
	checkAgainstLoad(t, b)
}

func TestIndexLongLine(t *testing.T) {
	defer transcript.SetMaxLine(1 << 16)()
	ok := `{"type":"user","uuid":"a","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n"
	long := `{"type":"user","uuid":"b","parentUuid":"a","message":{"role":"user","content":"` + strings.Repeat("x", 3<<20) + "\"}}\n"
	last := `{"type":"user","uuid":"c","parentUuid":"a","sessionId":"s","message":{"role":"user","content":"again"}}` + "\n"
	x := indexOf(t, []byte(ok+long+last))
	if diff := cmp.Diff([]int{2}, warnedLines(x.Warnings)); diff != "" || !strings.Contains(x.Warnings[0], "longer than") {
		t.Errorf("warnings %q, want line 2 named as too long", x.Warnings)
	}
	chain, _, _ := x.Chain("")
	if diff := cmp.Diff([]int{0, 2}, chain); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	if l := x.Lines[2]; l.Offset != int64(len(ok)+len(long)) || l.Length != len(last)-1 {
		t.Errorf("line 3 at %d, %d bytes; want %d, %d", l.Offset, l.Length, len(ok)+len(long), len(last)-1)
	}
}

// TestIndexLongEntry indexes a valid line longer than the index reads at
// a time: it is an entry of the chain, whole.
func TestIndexLongEntry(t *testing.T) {
	ok := `{"type":"user","uuid":"a","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n"
	long := `{"type":"assistant","uuid":"b","parentUuid":"a","sessionId":"s","message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("y", 3<<20) + `"}]}}` + "\n"
	last := `{"type":"user","uuid":"c","parentUuid":"b","sessionId":"s","message":{"role":"user","content":"again"}}`
	for _, file := range []string{ok + long + last, ok + long, ok + strings.TrimSuffix(long, "\n")} {
		b := []byte(file)
		x := indexOf(t, b)
		if len(x.Warnings) > 0 {
			t.Errorf("warnings %q", x.Warnings)
		}
		chain, _, _ := x.Chain("")
		if len(chain) < 2 || chain[1] != 1 {
			t.Fatalf("chain %v, want line 1 in it", chain)
		}
		got, err := x.ReadLine(1, nil)
		if err != nil || string(got) != strings.TrimSuffix(long, "\n") {
			t.Errorf("ReadLine(1) = %.40q…, %v; want the long line", got, err)
		}
		if tk := x.Lines[1].Tokens; tk != 3<<20/4 {
			t.Errorf("long line: %d tokens, want %d", tk, 3<<20/4)
		}
		checkAgainstLoad(t, b)
	}
}

func chainLines(ids ...string) []byte {
	var b strings.Builder
	for i := 0; i+1 < len(ids); i += 2 {
		parent := `null`
		if ids[i+1] != "" {
			parent = `"` + ids[i+1] + `"`
		}
		b.WriteString(`{"type":"user","uuid":"` + ids[i] + `","parentUuid":` + parent + `,"sessionId":"s","message":{"role":"user","content":"m ` + ids[i] + `"}}` + "\n")
	}
	return []byte(b.String())
}

func TestIndexChainDamage(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		want []string
		warn string
	}{
		{"whole", chainLines("a", "", "b", "a", "c", "b"), []string{"a", "b", "c"}, ""},
		{"cycle", chainLines("a", "c", "b", "a", "c", "b"), []string{"a", "b", "c"}, "form a loop"},
		{"cycle below the leaf", chainLines("a", "b", "b", "a", "c", "b", "d", "c"), []string{"a", "b", "c", "d"}, "form a loop"},
		{"self parent", chainLines("a", "a"), []string{"a"}, "form a loop"},
		{"missing parent", chainLines("b", "zz", "c", "b"), []string{"b", "c"}, "parent zz is not in the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := indexOf(t, tc.file)
			chain, warns, err := x.Chain("")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, i := range chain {
				got = append(got, x.Lines[i].UUID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
			if tc.warn == "" && len(warns) > 0 || tc.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tc.warn)) {
				t.Errorf("warnings %q, want one saying %q", warns, tc.warn)
			}
			checkAgainstLoad(t, tc.file)
		})
	}
	x := indexOf(t, chainLines("a", "", "b", "a"))
	if _, _, err := x.Chain("nope"); err == nil {
		t.Error("Chain of a uuid not in the file: no error")
	}
	if chain, _, err := x.Chain("a"); err != nil || len(chain) != 1 {
		t.Errorf("Chain(a) = %v, %v; want line 0", chain, err)
	}
}

// FuzzIndex indexes arbitrary files: the index never panics, and where it
// rejects the lines Load rejects, its chain is Load's.
func FuzzIndex(f *testing.F) {
	sample, _ := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	lines := bytes.SplitAfter(sample, []byte("\n"))
	for i := 0; i+3 <= len(lines); i += 3 {
		f.Add(bytes.Join(lines[i:i+3], nil))
	}
	f.Add(chainLines("a", "c", "b", "a", "c", "b"))
	f.Add(chainLines("b", "zz", "c", "b"))
	f.Add(append(chainLines("a", "", "b", "a"), `{"type":"user","uuid":"c","parentUuid":"b"`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := transcript.NewIndex(context.Background(), bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("NewIndex: %v", err)
		}
		chain, _, err := x.Chain("")
		if err != nil {
			t.Fatalf("Chain: %v", err)
		}
		for k, i := range chain {
			if k > 0 && x.Lines[i].Parent != x.Lines[chain[k-1]].UUID {
				t.Fatalf("chain line %d's parent is not the line before it", i+1)
			}
		}
		if bytes.Contains(b, []byte("Metadata")) || bytes.Contains(b, []byte(`\`)) {
			return // preserved segments and snips are Load's; escapes the index does not check
		}
		for _, c := range b {
			if c < 0x20 && c != '\n' && c != '\r' && c != 0 {
				return // control characters in strings, which the index does not check
			}
		}
		checkAgainstLoad(t, b)
	})
}
