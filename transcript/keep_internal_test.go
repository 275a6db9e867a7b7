package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/bench/gen"
)

// TestLoadKeepsNoLine loads a generated file of several blocks (the
// scanner reusing its buffers, results left in the file) and checks each
// entry against its line decoded on its own: same line re-encoded, same
// unknown members, same result.
func TestLoadKeepsNoLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(f, gen.Options{Size: 6 << 20, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := Load(context.Background(), src, LoadOptions{NoRepair: true})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for i := range conv.Entries {
		e := conv.Entries[i]
		line := data[e.offset:]
		line = line[:bytes.IndexByte(line, '\n')]
		want, err := DecodeEntry(line)
		if err != nil {
			t.Fatal(err)
		}
		if e.res != nil {
			left++
			if e.ToolUseResult != nil || !bytes.Equal(e.res.keys, mustKeys(t, want.ToolUseResult)) {
				t.Errorf("entry %s: result left in the file with keys %s, ToolUseResult %d bytes", e.UUID, e.res.keys, len(e.ToolUseResult))
			}
		}
		got, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := want.MarshalJSON(); !bytes.Equal(got, w) {
			t.Fatalf("entry %s re-encoded:\n%.300s\nwant\n%.300s", e.UUID, got, w)
		}
		if len(e.Unknown()) != len(want.Unknown()) {
			t.Errorf("entry %s: unknown members %q, want %q", e.UUID, e.Unknown(), want.Unknown())
		}
	}
	if left == 0 {
		t.Error("no result was left in the file: the test checks nothing of that")
	}
}

// mustKeys returns the keys of a result object as decodeEntry records
// them.
func mustKeys(t *testing.T, res []byte) []byte {
	t.Helper()
	var keys [][]byte
	if _, keys, _ = looseResult(res, 0, nil); len(keys) == 0 {
		return nil
	}
	out := []byte("{")
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(out, k...), ":null"...)
	}
	return append(out, '}')
}

// TestLineCacheHash: the cache tells a line it holds by its length and
// hash: the same bytes hit, a change of the same length misses.
func TestLineCacheHash(t *testing.T) {
	line := []byte(`{"type":"user","uuid":"u1","message":{"role":"user","content":"abc"}}`)
	e, err := DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	var c LineCache
	n, sum := lineSum(line)
	c.store(cachedLine{off: 7, e: &e, n: int32(n), sum: sum}, 0)
	if cl, ok := c.lookup(7, append([]byte(" "), line...)); !ok || cl.e != &e {
		t.Error("the same line (white space around it aside) missed")
	}
	changed := bytes.Replace(line, []byte("abc"), []byte("abd"), 1)
	if _, ok := c.lookup(7, changed); ok {
		t.Error("a line changed in place, of the same length, hit")
	}
	if _, ok := c.lookup(7, line[:len(line)-1]); ok {
		t.Error("a shorter line hit")
	}
	if _, ok := c.lookup(8, line); ok {
		t.Error("a line at another offset hit")
	}
}

// FuzzDecodeEntryLeavesResult checks a line decoded as Load decodes a
// file's line (a large result left in the file) against the same line
// decoded keeping everything: when the strict decode takes the line, the
// other does too and gives the same line back; when only the loose check
// takes it, what it did not check is the result, and reading that back
// says so.
func FuzzDecodeEntryLeavesResult(f *testing.F) {
	big := `{"stdout":"` + strings.Repeat(`x\"y\n`, ResultKeep/4) + `","k":[1,{"a":null}]}`
	f.Add(`{"type":"user","uuid":"u","toolUseResult":` + big + `,"other":1}`)
	f.Add(`{"type":"user","toolUseResult":"` + strings.Repeat("é", ResultKeep) + `"}`)
	f.Add(`{"type":"user","toolUseResult":` + big + `,"toolUseResult":{"small":1}}`)
	f.Add(`{"type":"user","toolUseResult":{"s":"` + strings.Repeat("a", ResultKeep) + `\x"}}`)
	f.Add(`{"type":"user","ToolUseResult":[` + strings.Repeat(`1,`, ResultKeep) + `2]}`)
	f.Fuzz(func(t *testing.T, line string) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ref := src.(reopener).fileRef()
		src.Close()
		if ref == nil {
			t.Skip("no file identity on this platform")
		}
		strict, serr := DecodeEntry([]byte(line))
		loose, lerr := decodeEntry([]byte(line), &arena{}, ref, 0, false)
		if serr == nil && lerr != nil {
			t.Fatalf("the strict decode takes the line, the one leaving its result fails: %v", lerr)
		}
		if lerr != nil {
			return
		}
		got, gerr := loose.MarshalJSON()
		if serr != nil && loose.res == nil {
			// What the strict decode refused was a large result a later
			// toolUseResult key replaced: nothing keeps it, and what is
			// kept was checked strictly.
			if gerr != nil || !json.Valid(got) {
				t.Fatalf("only the loose check took the line (%v); re-encoding it gives %v, %q", serr, gerr, got)
			}
			return
		}
		if serr != nil {
			if gerr == nil || !strings.Contains(gerr.Error(), "not valid JSON") {
				t.Fatalf("only the loose check took the line (%v), yet re-encoding it gives %v", serr, gerr)
			}
			return
		}
		if gerr != nil {
			t.Fatal(gerr)
		}
		if want, _ := strict.MarshalJSON(); !bytes.Equal(got, want) {
			t.Fatalf("re-encoded:\n%s\nwant\n%s", got, want)
		}
		for _, k := range []string{"stdout", "k", "small", "s", "x"} {
			if loose.ResultHasKey(k) != strict.ResultHasKey(k) {
				t.Errorf("ResultHasKey(%q) = %v, want %v", k, loose.ResultHasKey(k), strict.ResultHasKey(k))
			}
		}
	})
}
