package cli_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestJSONErrorResult: with --output-format json or stream-json, a run
// that fails before its turn (no API key, a bad flag value) still prints
// one result object with is_error, besides the message on stderr; a turn
// that fails prints its own, once.
func TestJSONErrorResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		result string // a part of the result's text
	}{
		{"no API key", []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL="}, []string{"-p", "hi", "--output-format", "json"}, 1, "ANTHROPIC_API_KEY"},
		{"no API key, stream-json", []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL="}, []string{"-p", "hi", "--output-format=stream-json", "--verbose"}, 1, "ANTHROPIC_API_KEY"},
		{"bad number", nil, []string{"-p", "hi", "--max-turns", "abc", "--output-format", "json"}, 2, "abc"},
		{"bad flag value after the format", nil, []string{"--output-format", "json", "-p", "hi", "--permission-mode", "yolo"}, 2, "yolo"},
		{"a Claude Code flag cairn lacks", nil, []string{"--output-format", "json", "-p", "hi", "--teleport"}, 2, "--teleport"},
		{"the model refuses the key", nil, []string{"-p", "hi", "--output-format", "json"}, 1, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			t.Setenv("HOME", p.home)
			p.env = tc.env
			if tc.name == "the model refuses the key" {
				p.srv.Enqueue(modeltest.Error(401))
			}
			code, out, errOut := p.run(t, "", tc.args...)
			if code != tc.code || errOut == "" {
				t.Fatalf("exit %d (want %d), stderr %q", code, tc.code, errOut)
			}
			if n := strings.Count(out, `"type":"result"`); n != 1 {
				t.Fatalf("%d results in %q", n, out)
			}
			res := resultJSON(t, out)
			if res["is_error"] != true || res["subtype"] != "error_during_execution" || !strings.Contains(res["result"].(string), tc.result) {
				t.Errorf("result %v", res)
			}
		})
	}
}
