package mcp

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"notes": {"command": "${BIN:-notes}", "args": ["${A}", "${}"], "env": {"K": "${K:-v}"}}}}`,
		`{"mcpServers": {"r": {"type": "http", "url": "https://x/${P}", "headers": {"A": "${T}"}}}}`,
		`{"mcpServers": {"s": {"type": "sse", "url": "http://h"}, "u": {"url": "http://h"}}}`,
		`{"mcpServers": {"": 1, "a": [], "b": {"type": 3}, "c": {"args": {}}}}`,
		`{"mcpServers": null}`, `{"mcpServers": []}`, `[]`, `null`, ``, `{`, `"${X`,
	} {
		f.Add(seed)
	}
	getenv := func(k string) string {
		if k == "A" {
			return "${A}" // a value that looks like a reference is not expanded again
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, data string) {
		configs, _ := Parse("f.json", []byte(data), getenv)
		for _, c := range configs {
			if c.Name == "" || c.Source != "f.json" {
				t.Fatalf("config %+v from %q", c, data)
			}
			switch c.Type {
			case Stdio:
				if c.Command == "" || c.URL != "" {
					t.Fatalf("stdio config %+v from %q", c, data)
				}
			case HTTP, SSE:
				if !strings.HasPrefix(c.URL, "http") || c.Command != "" {
					t.Fatalf("%s config %+v from %q", c.Type, c, data)
				}
			default:
				t.Fatalf("type %q from %q", c.Type, data)
			}
		}
	})
}
