package hook

import (
	"testing"
)

func FuzzAdd(f *testing.F) {
	for _, seed := range []string{
		`{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./check.sh","timeout":30}]}]}`,
		`{"Stop":[{"hooks":[{"type":"command","command":"x","timeout":1e400}]}]}`,
		`{"PreToolUse":[{"matcher":"(","hooks":[]}]}`,
		`{"SessionStart":[{"matcher":"startup|resume","hooks":[{"type":"command","command":"a","timeout":-0}]}]}`,
		`null`, `[]`, `{"Stop":null}`, `{"Stop":[null]}`, `{"Stop":[{"hooks":[null]}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := &Config{}
		c.Add("f.json", []byte(raw))
		for _, e := range Events {
			for _, cmd := range c.Commands(e, "Bash") {
				if cmd.Command == "" || cmd.Timeout < 0 {
					t.Fatalf("bad command %+v from %q", cmd, raw)
				}
			}
		}
	})
}

func FuzzParseOutput(f *testing.F) {
	for _, seed := range []string{
		`{"continue":false,"stopReason":"x","hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"a":1}}}`,
		`{"hookSpecificOutput":{"updatedInput":null}}`,
		`{"decision":"block"`, `plain text`, ` {"systemMessage":"hi"} `, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stdout string) {
		o := parseOutput(stdout)
		if o == nil {
			return
		}
		out := Outcome{Event: PreToolUse, Name: "PreToolUse", Results: []Result{{Output: o}}}
		out.fold()
		preToolUse(out)
	})
}
