package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Entry types. Chain entries (user, assistant, attachment, system) carry a
// uuid and a parentUuid; the rest are side records outside the conversation.
const (
	TypeUser                = "user"
	TypeAssistant           = "assistant"
	TypeAttachment          = "attachment"
	TypeSystem              = "system"
	TypeSummary             = "summary"
	TypeLastPrompt          = "last-prompt"
	TypeQueueOp             = "queue-operation"
	TypeCustomTitle         = "custom-title"
	TypeAgentName           = "agent-name"
	TypeFileHistorySnapshot = "file-history-snapshot"
)

// System entry subtypes cairn acts on.
const (
	SubtypeCompactBoundary = "compact_boundary"
	SubtypeSnipBoundary    = "snip_boundary"
)

// TimeLayout is the timestamp format of transcripts: ISO 8601 in UTC with
// milliseconds, as JavaScript's Date.toISOString writes it.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t as a transcript timestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// Entry is one line of a transcript. Fields cairn uses are typed; objects it
// passes along (message, attachment, toolUseResult, compactMetadata) stay
// raw JSON; every field it does not know is kept from the line it was read
// from and written back by MarshalJSON, so nothing a newer Claude Code wrote
// is lost when cairn rewrites an entry (forking, exporting).
//
// An entry read from a line keeps copies of the values it holds, not the
// line: its strings and raw fields and the members it has no field for
// share one piece of memory with nothing else in it (the entry's body), so
// what a load keeps is the conversation, not the file. An entry Load read
// from a file it can open again (see OpenFile) keeps a toolUseResult of
// more than ResultKeep bytes in the file only: ToolUseResult is nil then,
// and Result reads it back. One a Load with Map read keeps its message in
// the file's mapping (see LoadOptions.Map).
type Entry struct {
	Type    string
	Subtype string

	UUID              string
	ParentUUID        string // "" is null: the first line, or a compact boundary
	LogicalParentUUID string
	IsSidechain       bool
	IsMeta            bool

	IsCompactSummary          bool
	IsVisibleInTranscriptOnly bool
	IsAPIErrorMessage         bool

	PromptID   string
	SessionID  string
	Timestamp  string
	CWD        string
	Version    string
	GitBranch  string
	UserType   string
	Entrypoint string
	Slug       string
	// AgentID names the subagent whose sidechain transcript holds the
	// line (Claude Code's agentId); "" on a session's own lines.
	AgentID string

	PermissionMode string
	PromptSource   string

	Message   json.RawMessage // user, assistant
	RequestID string
	// ToolUseResult is the tool's structured result. It is nil in an entry
	// that left it in its file (see Result, HasResult); set, it is the
	// result, whatever the file holds.
	ToolUseResult           json.RawMessage
	SourceToolAssistantUUID string
	Attachment              json.RawMessage
	Content                 json.RawMessage // system text, queue-operation content
	Level                   string
	CompactMetadata         json.RawMessage
	SnipMetadata            json.RawMessage

	LeafUUID   string // last-prompt
	LastPrompt string // last-prompt

	CustomTitle string // custom-title: the name /rename gave the session

	// Extra holds fields set by the program that have no typed field.
	Extra map[string]json.RawMessage

	// body holds the values the entry keeps, copied out of the line it
	// was decoded from ("" for an entry built by code): raw fields that
	// are slices of it were checked then, and nothing changes it. Held as
	// a string and unknown's place in it as offsets, not as slices: an
	// Entry then takes 576 bytes, not 600 (a size class less: 576, not 640).
	body string
	// body[unknownAt:unknownEnd] is a JSON object of the line's members
	// Entry has no field for; both are 0 when there were none.
	unknownAt, unknownEnd uint32
	res                   *fileResult // the toolUseResult left in the file, if any
	offset                int64       // where the entry's line starts in its file
	cache                 *msgCache   // the decoded message, for entries read from a file
}

// IsChain reports whether the entry is part of the conversation chain.
func (e *Entry) IsChain() bool {
	if e.UUID == "" {
		return false
	}
	switch e.Type {
	case TypeUser, TypeAssistant, TypeAttachment, TypeSystem:
		return true
	}
	return false
}

// IsCompactBoundary reports whether e is a compact boundary: a system line
// with a null parent that cuts the chain.
func (e *Entry) IsCompactBoundary() bool {
	return e.Type == TypeSystem && e.Subtype == SubtypeCompactBoundary
}

// Time parses the entry's timestamp; the zero time when absent or invalid.
func (e *Entry) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// APIMessage is the "message" object of user and assistant entries: the API
// message plus the response metadata Claude Code stores beside it.
type APIMessage struct {
	ID         string        `json:"id,omitempty"`
	Role       string        `json:"role"`
	Model      string        `json:"model,omitempty"`
	Content    []model.Block `json:"content"`
	StopReason string        `json:"stop_reason,omitempty"`
	Usage      *model.Usage  `json:"usage,omitempty"`
	// ContentIsString records that content was stored as a plain string.
	ContentIsString bool `json:"-"`
}

// DecodeMessage decodes the entry's message; ok is false when it has none.
//
// Entries read by DecodeEntry decode their message once and keep it; the
// returned Content may be appended to without affecting later calls.
func (e *Entry) DecodeMessage() (m APIMessage, ok bool, err error) {
	if e.cache == nil {
		return e.decodeMessage()
	}
	c := e.cache
	c.once.Do(func() { c.msg, c.ok, c.err = e.decodeMessage() })
	m = c.msg
	m.Content = slices.Clip(m.Content)
	return m, c.ok, c.err
}

// msgCache holds an entry's decoded message; copies of the entry share it.
type msgCache struct {
	once sync.Once
	msg  APIMessage
	ok   bool
	err  error
}

func (e *Entry) decodeMessage() (m APIMessage, ok bool, err error) {
	// A message sliced from the line DecodeEntry checked is not checked
	// again, and its blocks share the line's bytes.
	return decodeMessage(e, e.Message, e.cache != nil && within(e.Message, e.bodyBytes()))
}

// decodeMessage decodes raw, the message of e; trusted, raw is valid JSON
// that outlives the message, and its blocks share raw's bytes.
func decodeMessage(e *Entry, raw []byte, trusted bool) (m APIMessage, ok bool, err error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return m, false, nil
	}
	var mf msgFields
	// Called directly, not through a variable, the scanners keep nothing
	// of their functions: what those hold stays on the stack.
	if trusted {
		_, err = jsonscan.TrustedObject(raw, jsonscan.SkipSpace(raw, 0), func(key []byte, f jsonscan.Flags, b []byte, i int) (int, error) {
			p, err := mf.field(key, f)
			if err != nil {
				return 0, err
			}
			if p == &mf.content && b[i] == '[' {
				// An array of blocks is decoded as it is read (see
				// model.DecodeContentSharedAt).
				var end int
				mf.blocks, end, mf.blocksErr = model.DecodeContentSharedAt(b, i)
				mf.content, mf.decoded = b[i:end:end], true
				return end, nil
			}
			end := jsonscan.Skip(b, i)
			mf.set(p, b[i:end:end])
			return end, nil
		})
	} else {
		err = jsonscan.Members(raw, func(key []byte, f jsonscan.Flags, val []byte) error {
			p, err := mf.field(key, f)
			if p != nil {
				*p = val
			}
			return err
		})
	}
	if err != nil {
		if err == jsonscan.ErrNotObject {
			var v struct{}
			err = json.Unmarshal(raw, &v)
		}
		return APIMessage{}, false, messageErr(e, err)
	}
	return mf.message(e, trusted)
}

// decodeMessageAt checks the message object that starts at b[i], a
// member of the line b that was not checked, as jsonscan.MemberValue
// checks it, while it decodes it as decodeMessage decodes a trusted one:
// the line's largest value is gone over once, not once to check it and
// again to decode it. It returns the index just past the message; it
// fails both when the message is not JSON and when it does not decode
// (or is not an object), without saying which: the caller checks the
// line again, as it would have without it, to tell.
func decodeMessageAt(e *Entry, b []byte, i int) (m APIMessage, end int, err error) {
	if b[i] != '{' {
		return APIMessage{}, 0, jsonscan.ErrNotObject
	}
	var mf msgFields
	end, err = jsonscan.CheckedObject(b, i, 2, func(key []byte, f jsonscan.Flags, b []byte, i int) (int, error) {
		p, err := mf.field(key, f)
		if err != nil {
			return 0, err
		}
		if p == &mf.content && b[i] == '[' {
			blocks, end, err := model.DecodeContentCheckedAt(b, i, 2)
			if err != nil {
				return 0, err
			}
			mf.blocks, mf.content, mf.decoded = blocks, b[i:end:end], true
			return end, nil
		}
		end, err := jsonscan.CheckedValue(b, i, 2)
		if err != nil {
			return 0, err
		}
		mf.set(p, b[i:end:end])
		return end, nil
	})
	if err != nil {
		return APIMessage{}, 0, err
	}
	m, _, err = mf.message(e, true)
	if err != nil {
		return APIMessage{}, 0, err
	}
	return m, end, nil
}

// msgFields holds the members of a message being decoded that
// msgFields.message decodes once all are read. They keep encoding/json's
// rules: keys match without regard to case, the last repeated key counts,
// null leaves a field empty. decoded says the last content was an array,
// decoded as it was read into blocks, with blocksErr.
type msgFields struct {
	id, role, mdl, content, stop, usage []byte
	blocks                              []model.Block
	blocksErr                           error
	decoded                             bool
}

// field returns where the member with key goes; nil for a key of no field.
func (mf *msgFields) field(key []byte, f jsonscan.Flags) (*[]byte, error) {
	k, err := jsonscan.KeyText(key, f)
	if err != nil {
		return nil, err
	}
	switch {
	case foldIs(k, "id"):
		return &mf.id, nil
	case foldIs(k, "role"):
		return &mf.role, nil
	case foldIs(k, "model"):
		return &mf.mdl, nil
	case foldIs(k, "content"):
		return &mf.content, nil
	case foldIs(k, "stop_reason"):
		return &mf.stop, nil
	case foldIs(k, "usage"):
		return &mf.usage, nil
	}
	return nil, nil
}

// set stores a member's value at p, which field returned: a content that
// is not an array undoes the last decoded.
func (mf *msgFields) set(p *[]byte, val []byte) {
	if p != nil {
		*p = val
		mf.decoded = mf.decoded && p != &mf.content
	}
}

// message decodes the members read into e's message; trusted, they are
// slices of valid JSON, which its blocks share.
func (mf *msgFields) message(e *Entry, trusted bool) (m APIMessage, ok bool, err error) {
	// Apart, so that m does not go where the values may (json.Unmarshal):
	// to the heap.
	dsts := [...]*string{&m.ID, &m.Role, &m.Model, &m.StopReason}
	for i, val := range [...][]byte{mf.id, mf.role, mf.mdl, mf.stop} {
		if val == nil || jsonscan.IsNull(val) {
			continue
		}
		if val[0] != '"' {
			var s string
			return APIMessage{}, false, messageErr(e, json.Unmarshal(val, &s))
		}
		if *dsts[i], err = jsonscan.Unquote(val, jsonscan.StringFlags(val)); err != nil {
			return APIMessage{}, false, messageErr(e, err)
		}
	}
	if usage := mf.usage; usage != nil && !jsonscan.IsNull(usage) {
		m.Usage = new(model.Usage)
		if !trusted || !decodeUsage(usage, m.Usage) {
			*m.Usage = model.Usage{}
			if err := json.Unmarshal(usage, m.Usage); err != nil {
				return APIMessage{}, false, messageErr(e, err)
			}
		}
	}
	content := mf.content
	if content != nil && jsonscan.IsNull(content) {
		content = nil
	}
	var blocks []model.Block
	switch {
	case mf.decoded:
		blocks, err = mf.blocks, mf.blocksErr
	case trusted:
		blocks, err = model.DecodeContentShared(content)
	default:
		blocks, err = model.DecodeContent(content)
	}
	if err != nil {
		return APIMessage{}, false, messageErr(e, err)
	}
	m.Content = blocks
	m.ContentIsString = len(content) > 0 && content[0] == '"'
	return m, true, nil
}

// messageErr says that e's message does not decode, and why.
func messageErr(e *Entry, err error) error {
	return fmt.Errorf("message of %s entry %s: %w", e.Type, e.UUID, err)
}

// decodeUsage decodes a usage object that is valid JSON (a slice of a
// checked line) as encoding/json would, without its reflection: every
// response line has one, and json.Unmarshal was a tenth of a resume's
// CPU. It reports false, leaving the rest to json.Unmarshal, when a field
// holds anything but an integer that fits or null.
func decodeUsage(b []byte, u *model.Usage) bool {
	ok := true
	err := jsonscan.TrustedMembers(b, func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return err
		}
		var dst *int64
		switch {
		case foldIs(k, "input_tokens"):
			dst = &u.InputTokens
		case foldIs(k, "output_tokens"):
			dst = &u.OutputTokens
		case foldIs(k, "cache_creation_input_tokens"):
			dst = &u.CacheCreationInputTokens
		case foldIs(k, "cache_read_input_tokens"):
			dst = &u.CacheReadInputTokens
		default:
			return nil
		}
		if jsonscan.IsNull(val) {
			return nil // encoding/json leaves the field as it is
		}
		n, isInt := smallInt(val)
		if !isInt {
			ok = false // a fraction, an exponent, a string: encoding/json says what
			return errNotSmallInt
		}
		*dst = n
		return nil
	})
	return ok && err == nil
}

var errNotSmallInt = errors.New("not an integer of at most 18 digits")

// smallInt parses a JSON integer of at most 18 digits, which cannot
// overflow an int64.
func smallInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ResultHasKey reports whether the entry's toolUseResult is a JSON object
// with a top-level key equal to name without regard to case, as
// jsonscan.HasKeyFold does. It reads nothing from the file: a result left
// there has its keys kept, and a result in the entry's body (checked when
// its line was) is not checked again.
func (e *Entry) ResultHasKey(name string) bool {
	b, trusted := []byte(e.ToolUseResult), within(e.ToolUseResult, e.bodyBytes())
	if b == nil && e.res != nil {
		b, trusted = e.res.keys, true
	}
	if !trusted {
		return jsonscan.HasKeyFold(b, name)
	}
	found := false
	err := jsonscan.TrustedMembers(b, func(key []byte, f jsonscan.Flags, _ []byte) error {
		if found {
			return nil
		}
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return err
		}
		found = strings.EqualFold(string(k), name) // as HasKeyFold; name need not be lower-case
		return nil
	})
	return err == nil && found
}

// within reports whether sub is a slice of buf.
func within(sub, buf []byte) bool {
	if len(sub) == 0 || len(buf) == 0 {
		return false
	}
	s, b := uintptr(unsafe.Pointer(unsafe.SliceData(sub))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return s >= b && s+uintptr(len(sub)) <= b+uintptr(len(buf))
}

// foldIs reports whether key equals name (lower-case ASCII) without
// regard to case, as encoding/json matches keys to fields.
func foldIs(key []byte, name string) bool {
	if len(key) == len(name) && string(key) == name {
		return true
	}
	// Cheap refusals first, as most keys are of other fields: a key
	// folds to name only at name's length or longer (a letter's other
	// cases outside ASCII are longer), and only when its first byte, if
	// ASCII, is name's first letter in either case.
	if len(key) < len(name) {
		return false
	}
	if c := key[0]; c < utf8.RuneSelf {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[0] {
			return false
		}
	}
	return strings.EqualFold(string(key), name)
}

// CompactMetadata is the compactMetadata object of a compact boundary.
type CompactMetadata struct {
	Trigger                 string             `json:"trigger"`
	PreTokens               int64              `json:"preTokens"`
	PostTokens              int64              `json:"postTokens,omitempty"`
	CumulativeDroppedTokens int64              `json:"cumulativeDroppedTokens,omitempty"`
	DurationMS              int64              `json:"durationMs,omitempty"`
	PreservedSegment        *PreservedSegment  `json:"preservedSegment,omitempty"`
	PreservedMessages       *PreservedMessages `json:"preservedMessages,omitempty"`
}

// PreservedSegment names the messages kept verbatim across a compaction:
// head … tail stay where they are in the file and are spliced in after the
// anchor (the summary) on load.
type PreservedSegment struct {
	HeadUUID   string `json:"headUuid"`
	AnchorUUID string `json:"anchorUuid"`
	TailUUID   string `json:"tailUuid"`
}

// PreservedMessages lists the preserved uuids explicitly (newer versions).
type PreservedMessages struct {
	AnchorUUID string   `json:"anchorUuid"`
	UUIDs      []string `json:"uuids"`
	AllUUIDs   []string `json:"allUuids"`
}

// DecodeCompactMetadata decodes a compact boundary's metadata.
func (e *Entry) DecodeCompactMetadata() (*CompactMetadata, error) {
	if len(e.CompactMetadata) == 0 {
		return &CompactMetadata{}, nil
	}
	var m CompactMetadata
	if err := json.Unmarshal(e.CompactMetadata, &m); err != nil {
		return nil, fmt.Errorf("compactMetadata of %s: %w", e.UUID, err)
	}
	return &m, nil
}

// knownFields are the keys DecodeEntry decodes into typed fields.
var knownFields = map[string]bool{
	"type": true, "subtype": true, "uuid": true, "parentUuid": true,
	"logicalParentUuid": true, "isSidechain": true, "isMeta": true,
	"isCompactSummary": true, "isVisibleInTranscriptOnly": true,
	"isApiErrorMessage": true, "promptId": true, "sessionId": true,
	"timestamp": true, "cwd": true, "version": true, "gitBranch": true,
	"userType": true, "entrypoint": true, "slug": true, "agentId": true, "permissionMode": true,
	"promptSource": true, "message": true, "requestId": true,
	"toolUseResult": true, "sourceToolAssistantUUID": true,
	"attachment": true, "content": true, "level": true,
	"compactMetadata": true, "snipMetadata": true, "leafUuid": true,
	"lastPrompt": true, "customTitle": true,
}

// DecodeEntry decodes one transcript line. The line must be a JSON object.
// Keys match fields as encoding/json matches them (exactly, else without
// regard to case; the last of repeated keys wins). The entry keeps copies
// of what it holds (see Entry), not line, and the members it has no field
// for, so they survive re-encoding.
func DecodeEntry(line []byte) (Entry, error) {
	return decodeEntry(line, nil, nil, 0, false)
}

// ResultKeep is the largest toolUseResult, in bytes as its line has it,
// that an entry Load reads from a file it can open again keeps in memory.
// Most results are a few hundred bytes and stay; the larger ones (a file
// read, a command's output: two fifths of a long session's bytes, which
// nothing sends to the model) stay in the file, their top-level keys kept
// for Entry.ResultHasKey, and Entry.Result reads them back.
const ResultKeep = 1 << 10

// member is a member of a line with no field in Entry.
type member struct{ key, val []byte }

// decodeEntry is DecodeEntry, taking the entry's body from a (a fresh
// allocation of its own when a is nil). With file set, line is a line of
// that file that starts at byte base, and a toolUseResult longer than
// ResultKeep is left there: checked as transcript.Index checks what it
// does not keep (jsonscan.LooseValue), and read back, checked strictly
// then, by Entry.Result. With eager set (and a), a message that is an
// object is checked and decoded in one pass (decodeMessageAt) and kept
// decoded, for DecodeMessage to return: for a load that decodes the
// messages anyway.
func decodeEntry(line []byte, a *arena, file *fileRef, base int64, eager bool) (Entry, error) {
	if uint64(len(line)) > math.MaxUint32 {
		// The entry keeps where its unknown members are in its body as
		// 32-bit offsets; no transcript line comes near (a file's are at
		// most jsonl.MaxLineBytes).
		return Entry{}, fmt.Errorf("a line of %d bytes is longer than an entry can be (4 GiB)", len(line))
	}
	orig := line
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Entry{}, fmt.Errorf("not a JSON object")
	}
	eager = eager && a != nil
	var e Entry
	var ubuf [8]member
	unknown := ubuf[:0]
	var res *fileResult
	var kbuf [16][]byte
	keys := kbuf[:0] // of res, slices of line
	// msg is the message decodeMessageAt decoded, when decoded is set.
	var msg APIMessage
	decoded := false
	setNamed := func(name string, key, val []byte) error {
		switch name {
		case "":
			unknown = append(unknown, member{key, val})
			return nil
		case "toolUseResult":
			res = nil // the last of repeated keys wins
		case "message":
			decoded = false
		}
		return e.setField(name, val)
	}
	set := func(key []byte, f jsonscan.Flags, val []byte) error {
		name, err := fieldName(key, f)
		if err != nil {
			return err
		}
		return setNamed(name, key, val)
	}
	var err error
	if !eager && (file == nil || len(line) <= ResultKeep) {
		err = jsonscan.Members(line, set)
	} else {
		// Every member is checked as Members checks it but for a large
		// toolUseResult, whose structure alone is checked.
		err = jsonscan.LooseMembersAt(line, func(key []byte, f jsonscan.Flags, b []byte, i int) (int, error) {
			if _, _, err := jsonscan.String(key, 0); err != nil {
				return 0, err // the loose scan does not look inside keys
			}
			if file != nil && len(line) > ResultKeep && f&jsonscan.Escaped == 0 && len(key) == len(`"toolUseResult"`) {
				if name, _ := fieldName(key, f); name == "toolUseResult" {
					end, k, err := looseResult(b, i, keys[:0])
					if err != nil {
						return 0, err
					}
					if end-i > ResultKeep {
						e.ToolUseResult, keys = nil, k
						res = &fileResult{file: file, n: end - i, sum: maphash.Bytes(hashSeed, b[i:end])}
						res.off = base + int64(offsetIn(b[i:end], orig))
						return end, nil
					}
				}
			}
			name, err := fieldName(key, f)
			if err != nil {
				return 0, err
			}
			if eager && name == "message" && b[i] == '{' {
				m, end, err := decodeMessageAt(&e, b, i)
				if err != nil {
					return 0, err // the line is read again below, to say why
				}
				e.Message, msg, decoded = b[i:end:end], m, true
				return end, nil
			}
			end, err := jsonscan.MemberValue(b, i)
			if err != nil {
				return 0, err
			}
			return end, setNamed(name, key, b[i:end:end])
		})
	}
	if err != nil {
		if eager {
			// The line or its message does not decode: the line is read
			// as it would be without eager, which says why, or keeps the
			// message for DecodeMessage to say why.
			return decodeEntry(orig, a, file, base, false)
		}
		return Entry{}, err
	}
	if e.Type == "" {
		return Entry{}, fmt.Errorf("no \"type\" field")
	}
	if a != nil && a.records && recordOnly(&e) {
		// The loader reads nothing else of the line: no part of it is
		// kept, nor its message mapped.
		if r, ok := sideRecords[e.Type]; ok {
			return Entry{Type: r.Type}, nil
		}
		return Entry{Type: strings.Clone(e.Type)}, nil
	}
	e.Message, e.ToolUseResult, e.Attachment = nullToNil(e.Message), nullToNil(e.ToolUseResult), nullToNil(e.Attachment)
	e.Content, e.CompactMetadata, e.SnipMetadata = nullToNil(e.Content), nullToNil(e.CompactMetadata), nullToNil(e.SnipMetadata)
	if res == nil {
		keys = nil
	}
	e.res = res
	var decodedMsg *APIMessage
	if decoded {
		decodedMsg = &msg
	}
	if e.Message != nil && a != nil && a.fmap != nil {
		e.mapMessage(e.Message, orig, base, a, decodedMsg)
	}
	inLine := e.Message
	e.keep(line, unknown, keys, a)
	if decoded && e.cache == nil {
		// Not mapped: the message's blocks share its copy in the body.
		rebase(&msg, inLine, e.Message)
		e.cache = &msgCache{}
		e.cache.once.Do(func() { e.cache.msg, e.cache.ok = msg, true })
	}
	if e.Message != nil && e.cache == nil {
		e.cache = &msgCache{}
	}
	return e, nil
}

// looseResult reads the toolUseResult value at b[i] as jsonscan.LooseValue
// checks it, appending to keys the raw literals of its top-level keys when
// it is an object.
func looseResult(b []byte, i int, keys [][]byte) (int, [][]byte, error) {
	if b[i] != '{' {
		end, err := jsonscan.LooseValue(b, i)
		return end, keys, err
	}
	end, err := jsonscan.LooseObject(b, i, func(key []byte, _ jsonscan.Flags, b []byte, i int) (int, error) {
		keys = append(keys, key)
		return jsonscan.LooseValue(b, i)
	})
	return end, keys, err
}

// offsetIn returns where sub, a slice of buf, starts in it.
func offsetIn(sub, buf []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// stringFieldCount is how many string fields Entry has.
const stringFieldCount = 23

// stringFields returns the entry's string fields.
func (e *Entry) stringFields() [stringFieldCount]*string {
	return [...]*string{&e.Type, &e.Subtype, &e.UUID, &e.ParentUUID, &e.LogicalParentUUID,
		&e.PromptID, &e.SessionID, &e.Timestamp, &e.CWD, &e.Version, &e.GitBranch, &e.UserType,
		&e.Entrypoint, &e.Slug, &e.AgentID, &e.PermissionMode, &e.PromptSource, &e.RequestID,
		&e.SourceToolAssistantUUID, &e.Level, &e.LeafUUID, &e.LastPrompt, &e.CustomTitle}
}

// keep copies what the entry holds of line (its strings that share line's
// bytes, its raw fields, the unknown members as one object, the keys of a
// result left in the file as an object with null values) into one piece
// of a, which becomes the entry's body. A string equal to the same field
// of the entry a kept last (the session id, the folder, the version: most
// of a line's envelope) is that entry's, not a copy.
func (e *Entry) keep(line []byte, unknown []member, keys [][]byte, a *arena) {
	strs := e.stringFields()
	raws := [...]*json.RawMessage{&e.Message, &e.ToolUseResult, &e.Attachment, &e.Content, &e.CompactMetadata, &e.SnipMetadata}
	n := 0
	var copied [len(strs)]bool
	for i, p := range strs {
		if a != nil && *p == a.last[i] {
			*p = a.last[i]
		} else if within(unsafe.Slice(unsafe.StringData(*p), len(*p)), line) {
			copied[i] = true
			n += len(*p)
		}
	}
	for _, p := range raws {
		if within(*p, line) {
			n += len(*p)
		}
	}
	if len(unknown) > 0 {
		n += 1 + len(unknown) // the braces and commas
		for _, m := range unknown {
			n += len(m.key) + 1 + len(m.val)
		}
	}
	if len(keys) > 0 {
		n += 1 + len(keys)
		for _, k := range keys {
			n += len(k) + len(":null")
		}
	}
	body := a.alloc(n)
	w := 0
	put := func(b []byte) []byte {
		k := copy(body[w:], b)
		s := body[w : w+k : w+k]
		w += k
		return s
	}
	for i, p := range strs {
		if copied[i] {
			s := put(unsafe.Slice(unsafe.StringData(*p), len(*p)))
			*p = unsafe.String(unsafe.SliceData(s), len(s))
		}
		if a != nil {
			a.last[i] = *p
		}
	}
	for _, p := range raws {
		if within(*p, line) { // not a message in the file's mapping
			*p = put(*p)
		}
	}
	object := func(n int, each func(i int)) []byte {
		start := w
		for i := range n {
			if i == 0 {
				put([]byte("{"))
			} else {
				put([]byte(","))
			}
			each(i)
		}
		put([]byte("}"))
		return body[start:w:w]
	}
	if len(unknown) > 0 {
		start := w
		object(len(unknown), func(i int) {
			put(unknown[i].key)
			put([]byte(":"))
			put(unknown[i].val)
		})
		e.unknownAt, e.unknownEnd = uint32(start), uint32(w)
	}
	if len(keys) > 0 {
		e.res.keys = object(len(keys), func(i int) {
			put(keys[i])
			put([]byte(":null"))
		})
	}
	e.body = unsafe.String(unsafe.SliceData(body), len(body))
}

// bodyBytes is e.body as bytes, to read only.
func (e *Entry) bodyBytes() []byte { return unsafe.Slice(unsafe.StringData(e.body), len(e.body)) }

// arena hands out pieces of memory that hold no pointers, from chunks it
// allocates, so that the values of many entries cost a few allocations
// the collector need not scan. It is not safe for concurrent use.
type arena struct {
	buf []byte
	// last holds the string fields of the entry kept last (see keep).
	last [stringFieldCount]string
	// left is about how many more bytes the arena's user will ask for
	// (what is left of the lines it decodes): a chunk is no larger.
	left int
	// fmap, when set, maps the file the lines are read from: entries keep
	// their messages there (see mapMessage).
	fmap *filemap.Region
	// records, set by the loader, makes a line it reads only the type of
	// (see recordOnly) an entry of its type alone.
	records bool
}

// recordOnly reports whether e is a line the loader reads nothing of but
// its type: one off the chain (progress, queue operations, snapshots, a
// line without a uuid) that is not a last-prompt record or a title.
func recordOnly(e *Entry) bool {
	return !e.IsChain() && e.Type != TypeLastPrompt && e.Type != TypeCustomTitle
}

// arenaChunk bounds a chunk; a piece of more than an eighth of it gets an
// allocation of its own, so at most an eighth of a chunk is left unused.
const arenaChunk = 256 << 10

// alloc returns n bytes; a nil arena allocates them on their own.
func (a *arena) alloc(n int) []byte {
	if a == nil || n > arenaChunk/8 {
		return make([]byte, n)
	}
	if n > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, min(arenaChunk, max(a.left, n, 4<<10)))
	}
	i := len(a.buf)
	a.buf = a.buf[:i+n]
	return a.buf[i : i+n : i+n]
}

// fieldName returns the known field a key names, matched as encoding/json
// matches keys to struct fields; "" for a key Entry has no field for.
func fieldName(key []byte, f jsonscan.Flags) (string, error) {
	if f&jsonscan.Escaped == 0 {
		k := key[1 : len(key)-1]
		if len(k) < len(knownByLen) {
			for _, name := range knownByLen[len(k)] {
				if string(k) == name {
					return name, nil
				}
			}
		}
		if f&jsonscan.NonASCII == 0 {
			var buf [64]byte
			if len(k) > len(buf) {
				return "", nil // longer than any known key
			}
			for i, c := range k {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				buf[i] = c
			}
			return knownLower[string(buf[:len(k)])], nil
		}
	}
	k, err := jsonscan.Unquote(key, f)
	if err != nil {
		return "", err
	}
	if knownFields[k] {
		return k, nil
	}
	for name := range knownFields {
		if strings.EqualFold(name, k) {
			return name, nil
		}
	}
	return "", nil
}

// knownByLen holds the known keys by their length, a few of each: every
// key of every line is looked up there, and comparing it with those of
// its length is cheaper than hashing it. knownLower maps each known key
// in lower case to the key.
var knownByLen, knownLower = func() ([32][]string, map[string]string) {
	var byLen [32][]string
	l := make(map[string]string, len(knownFields))
	for k := range knownFields {
		byLen[len(k)] = append(byLen[len(k)], k)
		l[strings.ToLower(k)] = k
	}
	return byLen, l
}()

// setField stores one member of a line in e.
func (e *Entry) setField(name string, val []byte) error {
	str := func(dst *string) error {
		if jsonscan.IsNull(val) {
			return nil
		}
		if len(val) == 0 || val[0] != '"' {
			return fmt.Errorf("field %q: want a string, not %.20s", name, val)
		}
		_, f, _ := jsonscan.String(val, 0)
		if f == 0 {
			// Plain ASCII: the string is the line's own bytes, until
			// decodeEntry copies it into the entry's body (the index
			// clones what it keeps).
			*dst = unsafe.String(unsafe.SliceData(val[1:]), len(val)-2)
			return nil
		}
		s, err := jsonscan.Unquote(val, f)
		if err != nil {
			return err
		}
		*dst = s
		return nil
	}
	boolean := func(dst *bool) error {
		switch string(val) {
		case "true":
			*dst = true
		case "false":
			*dst = false
		case "null":
		default:
			return fmt.Errorf("field %q: want true or false, not %.20s", name, val)
		}
		return nil
	}
	// Null leaves a string field as it is, but sets a uuid that may be
	// null to "" (in encoding/json's terms, a *string field to nil), so
	// that the last of repeated keys counts.
	optStr := func(dst *string) error {
		*dst = ""
		return str(dst)
	}
	switch name {
	case "type":
		return str(&e.Type)
	case "subtype":
		return str(&e.Subtype)
	case "uuid":
		return str(&e.UUID)
	case "parentUuid":
		return optStr(&e.ParentUUID)
	case "logicalParentUuid":
		return optStr(&e.LogicalParentUUID)
	case "isSidechain":
		return boolean(&e.IsSidechain)
	case "isMeta":
		return boolean(&e.IsMeta)
	case "isCompactSummary":
		return boolean(&e.IsCompactSummary)
	case "isVisibleInTranscriptOnly":
		return boolean(&e.IsVisibleInTranscriptOnly)
	case "isApiErrorMessage":
		return boolean(&e.IsAPIErrorMessage)
	case "promptId":
		return str(&e.PromptID)
	case "sessionId":
		return str(&e.SessionID)
	case "timestamp":
		return str(&e.Timestamp)
	case "cwd":
		return str(&e.CWD)
	case "version":
		return str(&e.Version)
	case "gitBranch":
		return str(&e.GitBranch)
	case "userType":
		return str(&e.UserType)
	case "entrypoint":
		return str(&e.Entrypoint)
	case "slug":
		return str(&e.Slug)
	case "agentId":
		return str(&e.AgentID)
	case "permissionMode":
		return str(&e.PermissionMode)
	case "promptSource":
		return str(&e.PromptSource)
	case "requestId":
		return str(&e.RequestID)
	case "sourceToolAssistantUUID":
		return str(&e.SourceToolAssistantUUID)
	case "level":
		return str(&e.Level)
	case "leafUuid":
		return str(&e.LeafUUID)
	case "lastPrompt":
		return str(&e.LastPrompt)
	case "customTitle":
		return str(&e.CustomTitle)
	case "message":
		e.Message = val
	case "toolUseResult":
		e.ToolUseResult = val
	case "attachment":
		e.Attachment = val
	case "content":
		e.Content = val
	case "compactMetadata":
		e.CompactMetadata = val
	case "snipMetadata":
		e.SnipMetadata = val
	}
	return nil
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// unknownObject is the JSON object of the members of e's line that Entry
// has no field for, in e.body, or nil.
func (e *Entry) unknownObject() []byte {
	if e.unknownEnd == 0 {
		return nil
	}
	return e.bodyBytes()[e.unknownAt:e.unknownEnd:e.unknownEnd]
}

// Unknown returns the fields of the line e was decoded from that Entry has
// no typed field for, as the line had them.
func (e *Entry) Unknown() map[string]json.RawMessage {
	unknown := e.unknownObject()
	if unknown == nil {
		return nil
	}
	var all map[string]json.RawMessage
	// unknown holds members of the line DecodeEntry checked: they are
	// found without checking them again.
	err := jsonscan.TrustedMembers(unknown, func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.Unquote(key, f)
		if err != nil {
			return err
		}
		if all == nil {
			all = make(map[string]json.RawMessage)
		}
		all[k] = val
		return nil
	})
	if err != nil {
		return nil
	}
	return all
}

// MarshalJSON encodes the entry as one transcript line (without the newline),
// keys in the order Claude Code writes them, then fields it does not know.
// A toolUseResult left in the file is read back (see Entry.Result): when
// that fails, so does MarshalJSON, rather than write a line without it.
func (e Entry) MarshalJSON() ([]byte, error) {
	result, err := e.Result()
	if err != nil {
		return nil, err
	}
	var w jsonw.Object
	chain := e.UUID != ""
	if chain || e.ParentUUID != "" {
		if e.ParentUUID == "" {
			w.Null("parentUuid")
		} else {
			w.Str("parentUuid", e.ParentUUID)
		}
	}
	if chain {
		if e.LogicalParentUUID != "" || e.IsCompactBoundary() {
			if e.LogicalParentUUID == "" {
				w.Null("logicalParentUuid")
			} else {
				w.Str("logicalParentUuid", e.LogicalParentUUID)
			}
		}
		w.Bool("isSidechain", e.IsSidechain)
	}
	w.OptStr("promptId", e.PromptID)
	w.Str("type", e.Type)
	w.OptStr("subtype", e.Subtype)
	w.OptRaw("attachment", e.Attachment)
	w.OptRaw("message", e.Message)
	w.OptStr("requestId", e.RequestID)
	w.OptRaw("content", e.Content)
	w.OptBool("isMeta", e.IsMeta)
	w.OptBool("isVisibleInTranscriptOnly", e.IsVisibleInTranscriptOnly)
	w.OptBool("isCompactSummary", e.IsCompactSummary)
	w.OptBool("isApiErrorMessage", e.IsAPIErrorMessage)
	w.OptStr("lastPrompt", e.LastPrompt)
	w.OptStr("customTitle", e.CustomTitle)
	w.OptStr("leafUuid", e.LeafUUID)
	w.OptStr("uuid", e.UUID)
	w.OptStr("timestamp", e.Timestamp)
	w.OptStr("level", e.Level)
	w.OptRaw("compactMetadata", e.CompactMetadata)
	w.OptRaw("snipMetadata", e.SnipMetadata)
	w.OptRaw("toolUseResult", result)
	w.OptStr("sourceToolAssistantUUID", e.SourceToolAssistantUUID)
	w.OptStr("permissionMode", e.PermissionMode)
	w.OptStr("promptSource", e.PromptSource)
	w.OptStr("userType", e.UserType)
	w.OptStr("entrypoint", e.Entrypoint)
	w.OptStr("cwd", e.CWD)
	w.OptStr("sessionId", e.SessionID)
	w.OptStr("version", e.Version)
	w.OptStr("gitBranch", e.GitBranch)
	w.OptStr("agentId", e.AgentID)
	w.OptStr("slug", e.Slug)
	extra := e.Unknown()
	for k, v := range e.Extra {
		if extra == nil {
			extra = make(map[string]json.RawMessage, len(e.Extra))
		}
		extra[k] = v
	}
	w.Sorted(extra, func(k string) bool { return knownFields[k] })
	return w.Bytes(), nil
}
