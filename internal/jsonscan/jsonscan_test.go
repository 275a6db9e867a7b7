package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonscan"
)

var samples = []string{
	`{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x\n\u00e9"] } `,
	`{"a":{"b":{"c":[{}]}}}`, `"\ud800"`, `"\u00zz"`, `{"a":01}`, `{"a":1,}`, `[1,]`, `{"a"}`,
	`{"a":"b"}x`, `-`, `1.`, `1e`, `1e+`, `.5`, `tru`, `nul`, `"a` + "\t" + `b"`, "\"\xff\"",
	`{"a":"\\"}`, `{"k\"ey":1}`, `[[[[]]]]`, `{"type":"text","text":"hi"}`, ``, ` `, `{"a":1}{`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := jsonscan.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// members decodes an object's keys and values with Members.
func members(b []byte) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	err := jsonscan.Members(b, func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.Unquote(key, f)
		if err != nil {
			return err
		}
		out[k] = val
		return nil
	})
	return out, err
}

func TestMembers(t *testing.T) {
	got, err := members([]byte(` {"a" : [1, 2] , "b":"x\"y", "a":{"z":null}} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{"a": json.RawMessage(`{"z":null}`), "b": json.RawMessage(`"x\"y"`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
	if _, err := members([]byte(`[1]`)); err != jsonscan.ErrNotObject {
		t.Errorf("Members of an array: %v, want ErrNotObject", err)
	}
}

func TestCompact(t *testing.T) {
	for s, want := range map[string]bool{`{"a":1}`: true, `{"a": 1}`: false, `{"a":"x y"}`: true, ` 1`: false, `[1,2]`: true, `[1,2`: false} {
		if got := jsonscan.Compact([]byte(s)); got != want {
			t.Errorf("Compact(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range samples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := json.Valid(b)
		if got := jsonscan.Valid(b); got != valid {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, valid)
		}
		var c bytes.Buffer
		if got, want := jsonscan.Compact(b), json.Compact(&c, b) == nil && bytes.Equal(c.Bytes(), b); got != want {
			t.Fatalf("Compact(%q) = %v, json.Compact says %v", b, got, want)
		}
		var want map[string]json.RawMessage
		werr := json.Unmarshal(b, &want)
		got, gerr := members(b)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Members(%q): error %v, json.Unmarshal's %v", b, gerr, werr)
		}
		if werr == nil {
			if len(got) != len(want) {
				t.Fatalf("Members(%q) = %d keys, json.Unmarshal %d", b, len(got), len(want))
			}
			for k, v := range want {
				if string(got[k]) != string(v) {
					t.Fatalf("Members(%q)[%q] = %s, json.Unmarshal %s", b, k, got[k], v)
				}
			}
		}
		if valid {
			var a, tr []string
			collect := func(dst *[]string) jsonscan.MemberFunc {
				return func(key []byte, f jsonscan.Flags, val []byte) error {
					k, err := jsonscan.Unquote(key, f)
					*dst = append(*dst, k, string(val))
					return err
				}
			}
			aerr := jsonscan.Members(b, collect(&a))
			terr := jsonscan.TrustedMembers(b, collect(&tr))
			if (aerr == nil) != (terr == nil) || fmt.Sprint(a) != fmt.Sprint(tr) {
				t.Fatalf("TrustedMembers(%q) = %q, %v; Members %q, %v", b, tr, terr, a, aerr)
			}
			var ea, et []string
			eaerr := jsonscan.Elements(b, func(v []byte) error { ea = append(ea, string(v)); return nil })
			eterr := jsonscan.TrustedElements(b, func(v []byte) error { et = append(et, string(v)); return nil })
			if (eaerr == nil) != (eterr == nil) || fmt.Sprint(ea) != fmt.Sprint(et) {
				t.Fatalf("TrustedElements(%q) = %q; Elements %q", b, et, ea)
			}
		}
		if len(b) > 0 && b[0] == '"' {
			end, fl, err := jsonscan.String(b, 0)
			var ws string
			if jerr := json.Unmarshal(b, &ws); jerr == nil {
				if err != nil || jsonscan.SkipSpace(b, end) != len(b) {
					t.Fatalf("String(%q) = %d, %v; json decodes it whole", b, end, err)
				}
				if sf := jsonscan.StringFlags(b[:end]); sf&fl != fl {
					t.Fatalf("StringFlags(%q) = %v, String says %v", b[:end], sf, fl)
				}
				s, err := jsonscan.Unquote(b[:end], fl)
				if err != nil || s != ws {
					t.Fatalf("Unquote(%q) = %q, %v; json.Unmarshal gives %q", b, s, err, ws)
				}
			}
		}
	})
}

func TestSkipString(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		want int
	}{
		{`"a"`, 0, 3},
		{`"a"x`, 0, 3},
		{`x"ab"`, 1, 5},
		{`"a\"b"`, 0, 6},  // an escaped quote is inside
		{`"a\\"b"`, 0, 5}, // an escaped backslash, then the end
		{`"a\\\"b"`, 0, 8},
		{`""`, 0, 2},
		{`"open`, 0, 5}, // no end: len(b)
		{`"\"`, 0, 3},   // the only quote after the first is escaped
		{`{"k":"v"}`, 5, 8},
	} {
		if got := jsonscan.SkipString([]byte(c.in), c.at); got != c.want {
			t.Errorf("SkipString(%s, %d) = %d, want %d", c.in, c.at, got, c.want)
		}
	}
}
