package frontmatter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name, in    string
		front, body string
		ok, err     bool
	}{
		{name: "none", in: "# Title\nbody\n", body: "# Title\nbody\n"},
		{name: "simple", in: "---\npaths: a\n---\nbody\n", front: "paths: a\n", body: "body\n", ok: true},
		{name: "crlf", in: "---\r\nname: x\r\n---\r\nbody", front: "name: x\r\n", body: "body", ok: true},
		{name: "bom", in: "\xef\xbb\xbf---\nname: x\n---\n", front: "name: x\n", body: "", ok: true},
		{name: "empty", in: "---\n---\nbody", front: "", body: "body", ok: true},
		{name: "no newline after close", in: "---\na: 1\n---", front: "a: 1\n", body: "", ok: true},
		{name: "unclosed", in: "---\na: 1\nbody\n", body: "---\na: 1\nbody\n", err: true},
		{name: "rule not at start", in: "text\n---\na: 1\n---\n", body: "text\n---\na: 1\n---\n"},
		{name: "dashes only", in: "---", body: "---"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			front, body, ok, err := Split([]byte(tc.in))
			if (err != nil) != tc.err || ok != tc.ok {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if diff := cmp.Diff(tc.front, string(front)); diff != "" {
				t.Errorf("front (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.body, string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	var v struct {
		Name  string `yaml:"name"`
		Paths any    `yaml:"paths"`
	}
	body, err := Parse([]byte("---\nname: r\npaths:\n  - src/**/*.go\n---\nText\n"), &v)
	if err != nil || string(body) != "Text\n" || v.Name != "r" {
		t.Fatalf("body %q, v %+v, err %v", body, v, err)
	}
	body, err = Parse([]byte("---\nname: [unclosed\n---\nText\n"), &v)
	if err == nil || string(body) != "Text\n" {
		t.Errorf("invalid YAML: body %q, err %v", body, err)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\nb", "---\n", "x", "\xef\xbb\xbf---\r\n---\r\n", "---\n---"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		front, body, ok, err := Split(data)
		if !ok {
			if string(body) != string(data) || front != nil {
				t.Fatalf("no front matter must return the data as body")
			}
			return
		}
		if err != nil || len(front)+len(body) > len(data) {
			t.Fatalf("front %d + body %d > data %d (err %v)", len(front), len(body), len(data), err)
		}
		var v map[string]any
		_, _ = Parse(data, &v) // must not panic
	})
}
