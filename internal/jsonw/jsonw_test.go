package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestString(t *testing.T) {
	for _, s := range []string{"", "plain text", `quote " and \ slash`, "<system-reminder>\n&", "tab\tnul\x00", "é ünïcode 🙂", "\u2028", "bad \xff utf8"} {
		got := String(s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("String(%q) = %s: %v", s, got, err)
		}
		want := s
		if s == "bad \xff utf8" {
			want = "bad \uFFFD utf8"
		}
		if back != want {
			t.Errorf("String(%q) round-trips to %q", s, back)
		}
	}
	if got := string(String("<a&b>")); got != `"<a&b>"` {
		t.Errorf("HTML characters escaped: %s", got)
	}
}

func FuzzString(f *testing.F) {
	f.Add("x")
	f.Add("tab\tnul\x00\b\f\u2028\u2029 \xff\xfe <&> \u007f é 🙂")
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(String(s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		// Byte for byte what encoding/json writes without HTML escaping.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if want := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(String(s), want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, String(s), want)
		}
	})
}

func FuzzRaw(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "a" : [1, 2] } `, `"x y"`, `[1,`, `{"a":"\u2028"}`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var o Object
		o.Raw("k", v)
		var want bytes.Buffer
		w := []byte(`{"k":null}`)
		if json.Compact(&want, v) == nil {
			w = append(append([]byte(`{"k":`), want.Bytes()...), '}')
		}
		if got := o.Bytes(); !bytes.Equal(got, w) {
			t.Fatalf("Raw(%q) = %s, want %s", v, got, w)
		}
	})
}

func TestObjectOrder(t *testing.T) {
	var o Object
	o.Str("b", "1")
	o.Null("a")
	o.OptStr("skip", "")
	o.Bool("c", false)
	o.Raw("d", json.RawMessage(" { \"x\" : 1 } "))
	o.Sorted(map[string]json.RawMessage{"z": []byte("2"), "y": []byte("3")}, nil)
	if got, want := string(o.Bytes()), `{"b":"1","a":null,"c":false,"d":{"x":1},"y":3,"z":2}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var empty Object
	if string(empty.Bytes()) != "{}" {
		t.Error("empty object")
	}
}

// TestObjectBytesThenMore: fields added after Bytes leave what it
// returned as it was, and Bytes again gives the longer object.
func TestObjectBytesThenMore(t *testing.T) {
	var o Object
	o.Str("a", "1")
	first := o.Bytes()
	o.Str("b", "2")
	o.Null("c")
	if got, want := string(first), `{"a":"1"}`; got != want {
		t.Errorf("first Bytes changed to %s, want %s", got, want)
	}
	if got, want := string(o.Bytes()), `{"a":"1","b":"2","c":null}`; got != want {
		t.Errorf("second Bytes %s, want %s", got, want)
	}
	if got := string(o.Bytes()); got != `{"a":"1","b":"2","c":null}` {
		t.Errorf("Bytes twice: %s", got)
	}
	if _ = append(first, 'x'); string(o.Bytes()) != `{"a":"1","b":"2","c":null}` {
		t.Error("an append to what Bytes returned changed the object")
	}
}
