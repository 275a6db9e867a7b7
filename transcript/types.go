package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/model"
)

// The line and attachment types Claude Code writes, and what each is to a
// resume: one table, so a new version's types are added in one place.
// Observed on Claude Code 2.1.197 and 2.1.332 (see COMPAT.md); the oracle
// tests (internal/ccoracle) hold the loader to 2.1.332's own resume.

// sideRecordTypes are line types that are not part of the conversation:
// records about the session that a resume never sends.
var sideRecordTypes = map[string]bool{
	TypeSummary:             true,
	TypeLastPrompt:          true,
	TypeQueueOp:             true,
	TypeCustomTitle:         true,
	TypeFileHistorySnapshot: true,
	"progress":              true, // hook and tool progress
	"mode":                  true,
	"permission-mode":       true,
	"tag":                   true,
	TypeAgentName:           true,
	"ai-title":              true,
	"pr-link":               true,
	"cost-state":            true,
	"atis-latch":            true,
	"tools-used":            true,
	"api-request":           true, // 2.1.332 logs its wire requests
	"api-request-shape":     true,
	"api-request-blob":      true,
}

// KnownLineType reports whether cairn knows lines of type typ: a chain
// type or a side record. Lines of other types (a newer Claude Code's) are
// kept in the file and left out of the conversation, with a warning.
func KnownLineType(typ string) bool {
	switch typ {
	case TypeUser, TypeAssistant, TypeAttachment, TypeSystem:
		return true
	}
	return sideRecordTypes[typ]
}

// leadsTurn reports whether an attachment line is placed before the typed
// text of its turn when the conversation is sent. Claude Code 2.1.332
// (which records what it sent: renderedRole) sends a turn's attachments
// first, then the prompt; 2.1.197 and cairn send the prompt first
// (versions between are not observed and read as 2.1.197). Each line follows its writer, so a resume sends what was sent.
func leadsTurn(e *Entry) bool {
	_, ok := recordedRole(e)
	return ok
}

// foldsIntoResult reports whether an attachment that follows tool results
// is sent inside the last tool result rather than beside it: Claude Code
// 2.1.332 appends its system-role reminders to the result's text, and
// sends user-role ones (renderedBesideToolResult) as text after it.
func foldsIntoResult(e *Entry) bool {
	role, ok := recordedRole(e)
	return ok && role == "system"
}

// recordedRole returns the renderedRole of an attachment line written by
// Claude Code 2.1.332 or later; ok is false for other writers (cairn
// writes renderedRole too, but sends its attachments its own way).
func recordedRole(e *Entry) (role string, ok bool) {
	if !versionAtLeast(e.Version, 2, 1, 332) {
		return "", false
	}
	raw, ok := e.unknownMember("renderedRole")
	if !ok {
		return "", false
	}
	_ = json.Unmarshal(raw, &role)
	return role, true
}

// unknownMember returns the member called name among those of e's line
// that Entry has no field for, as Unknown()[name] does, without making
// the map of all of them: attachment lines are asked for one or two each
// time a conversation is sent.
func (e *Entry) unknownMember(name string) (json.RawMessage, bool) {
	unknown := e.unknownObject()
	if unknown == nil {
		return nil, false
	}
	var val []byte
	err := jsonscan.TrustedMembers(unknown, func(key []byte, f jsonscan.Flags, v []byte) error {
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return err
		}
		if string(k) == name {
			val = v
		}
		return nil
	})
	if err != nil || val == nil {
		return nil, false
	}
	return val, true
}

// isSentAttachment reports whether an attachment line puts anything in
// the conversation. Records such as 2.1.332's prompt_snapshot (the system
// prompt and tools of a request) and session_context have nothing to
// render: they are not part of a turn, so one after the last reply does
// not mean the turn was cut short.
func isSentAttachment(e *Entry) bool {
	blocks, err := renderAttachment(e)
	return err == nil && len(blocks) > 0
}

// localCommandTags open the user lines Claude Code writes for a slash
// command run in the program itself (/compact): not a prompt to answer.
var localCommandTags = []string{"<command-name>", "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>"}

// isLocalCommand reports whether a user line records a local command.
func isLocalCommand(e *Entry) bool {
	m, ok, err := e.DecodeMessage()
	if !ok || err != nil || len(m.Content) == 0 || m.Content[0].Type != model.BlockText {
		return false
	}
	for _, tag := range localCommandTags {
		if strings.HasPrefix(m.Content[0].Text, tag) {
			return true
		}
	}
	return false
}

// versionAtLeast reports whether v, a Claude Code version "X.Y.Z", is at
// least major.minor.patch; false for anything else (cairn's versions).
func versionAtLeast(v string, major, minor, patch int) bool {
	var a, b, c int
	if x, ok := versionNumbers(v); ok {
		a, b, c = x[0], x[1], x[2]
	} else if n, err := fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c); err != nil || n != 3 {
		return false
	}
	return a > major || a == major && (b > minor || b == minor && c >= patch)
}

// versionNumbers parses a version of the form Claude Code writes, three
// runs of at most nine digits joined by dots, as fmt.Sscanf would, without
// its cost: each attachment line asks.
func versionNumbers(v string) (x [3]int, ok bool) {
	k, digits := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9' && digits < 9:
			x[k] = x[k]*10 + int(c-'0')
			digits++
		case c == '.' && digits > 0 && k < 2:
			k, digits = k+1, 0
		default:
			return x, false
		}
	}
	return x, k == 2 && digits > 0
}

// seamBefore reports whether a user line joined to the user message before
// it gets the newline at the seam of two texts. Claude Code 2.1.332 adds it
// before a line that is not meta (a prompt, a command's output) and
// before a meta line of content blocks (a custom command's body, after
// its <command-name> line), not before a meta line of one string (a
// command's caveat); 2.1.197 and cairn add it before every user line.
func seamBefore(e *Entry) bool {
	if !e.IsMeta || !versionAtLeast(e.Version, 2, 1, 332) {
		return true
	}
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(e.Message, &m) != nil {
		return false
	}
	c := bytes.TrimSpace(m.Content)
	return len(c) > 0 && c[0] == '['
}
