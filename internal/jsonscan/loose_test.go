package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLooseMembers(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{` {"a":1} `, true},
		{`{"a":{"b":[1,2,{"c":null}],"d":"x\"y"},"e":[]}`, true},
		{`{"a":[{},[],"",-0.5e3,true,false]}`, true},
		{`{"a":1,}`, false},
		{`{"a":[1,]}`, false},
		{`{"a":[1}`, false},
		{`{"a":{"b":1]}`, false},
		{`{"a":"unterminated}`, false},
		{`{"parentUuid":"999`, false},
		{`}{ garbage ]`, false},
		{`{"a":1}{"b":2}`, false},
		{`{"a":01}`, false},
		{`{"a":tru}`, false},
		{`{"a" 1}`, false},
		{`{"a":{"b" 1}}`, false},
		{`{"a":{1:2}}`, false},
		{`{"a":[1 2]}`, false},
		{`{"a":`, false},
		{`{"a":[`, false},
		{`[1]`, false},
		{`{"a":"\\"}`, true},
		{`{"a":"\\\"}`, false},
	} {
		var keys []string
		err := LooseMembers([]byte(tc.in), func(key []byte, _ Flags, val []byte) error {
			keys = append(keys, string(key))
			return nil
		})
		if (err == nil) != tc.ok {
			t.Errorf("LooseMembers(%s) = %v, want ok %v", tc.in, err, tc.ok)
		}
		// Where the input's strings are plain, the loose check is the strict
		// one.
		if !strings.Contains(tc.in, `\`) && (err == nil) != (json.Valid([]byte(tc.in)) && strings.HasPrefix(strings.TrimSpace(tc.in), "{")) {
			t.Errorf("LooseMembers(%s) = %v, but json.Valid says %v", tc.in, err, json.Valid([]byte(tc.in)))
		}
	}
}

func FuzzLooseMembers(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}],"d":"x\"y"},"e":[]}`))
	f.Add([]byte(`{"a":[1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var n int
		loose := LooseMembers(b, func(key []byte, _ Flags, val []byte) error {
			n++
			return nil
		})
		strict := Members(b, func([]byte, Flags, []byte) error { return nil })
		// Strict acceptance implies loose acceptance; the converse holds
		// but for the inside of strings.
		if strict == nil && loose != nil {
			t.Fatalf("Members accepts %q, LooseMembers rejects it: %v", b, loose)
		}
	})
}

// TestLooseObjectArray reads nested values with callers' own readers, as
// the transcript index reads a message's content blocks.
func TestLooseObjectArray(t *testing.T) {
	read := func(in string) error {
		return LooseMembersAt([]byte(in), func(key []byte, _ Flags, b []byte, i int) (int, error) {
			if string(key) != `"content"` || b[i] != '[' {
				return LooseValue(b, i)
			}
			return LooseArray(b, i, func(b []byte, i int) (int, error) {
				if b[i] != '{' {
					return LooseValue(b, i)
				}
				return LooseObject(b, i, func(key []byte, _ Flags, b []byte, i int) (int, error) {
					if string(key) == `"text"` {
						return LooseString(b, i)
					}
					return LooseValue(b, i)
				})
			})
		})
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"role":"user","content":[{"type":"text","text":"a"},{"text":"b"},"x",[]]}`, true},
		{`{"content":[]}`, true},
		{`{"content":[{}]}`, true},
		{`{"content":[{"text":1}]}`, false}, // LooseString wants a string
		{`{"content":[{"text":"a"},]}`, false},
		{`{"content":[{"text":"a"}}`, false},
		{`{"content":[{"text":"a",}]}`, false},
		{`{"content":[{"text" "a"}]}`, false},
		{`{"content":[{"text":"a"}] x}`, false},
		{`{"content":[{"text":"a"}]} x`, false},
		{`{"content":[{"text":"a`, false},
	} {
		if err := read(tc.in); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}
