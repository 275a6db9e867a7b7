package transcripttest

import (
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// BigResult is a session of four lines, in Claude Code's shape: a prompt,
// a Read call, its result, a reply. The result, on the line whose uuid is
// resultUUID, is a string of 6 MB: more than a load with
// transcript.LoadOptions.Map keeps in the file's mapping at least. It
// returns the file's bytes and the result.
func BigResult(sessionID, cwd, resultUUID string) (file []byte, result string) {
	result = strings.Repeat("0123456789abcdef", 6<<20/16)
	env := `"sessionId":"` + sessionID + `","cwd":"` + cwd + `","version":"2.1.197","timestamp":"2026-12-01T09:00:00.000Z"`
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,` + env + `,"message":{"role":"user","content":"read it"}}`,
		`{"type":"assistant","uuid":"u2","parentUuid":"u1",` + env + `,"message":{"id":"m1","role":"assistant","model":"test-model","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]}}`,
		`{"type":"user","uuid":"` + resultUUID + `","parentUuid":"u2",` + env + `,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + string(jsonw.String(result)) + `}]}}`,
		`{"type":"assistant","uuid":"u4","parentUuid":"` + resultUUID + `",` + env + `,"message":{"id":"m2","role":"assistant","model":"test-model","content":[{"type":"text","text":"done"}]}}`,
	}
	return []byte(strings.Join(lines, "\n") + "\n"), result
}
