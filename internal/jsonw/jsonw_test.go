package jsonw

import (
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
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(String(s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
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
