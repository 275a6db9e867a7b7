package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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

	Message                 json.RawMessage // user, assistant
	RequestID               string
	ToolUseResult           json.RawMessage
	SourceToolAssistantUUID string
	Attachment              json.RawMessage
	Content                 json.RawMessage // system text, queue-operation content
	Level                   string
	CompactMetadata         json.RawMessage
	SnipMetadata            json.RawMessage

	LeafUUID   string // last-prompt
	LastPrompt string // last-prompt

	// Extra holds fields set by the program that have no typed field.
	Extra map[string]json.RawMessage

	raw    []byte    // the line this entry was decoded from
	offset int64     // where that line starts in its file
	cache  *msgCache // the decoded message, for entries read from a file
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
	if len(e.Message) == 0 || bytes.Equal(e.Message, []byte("null")) {
		return m, false, nil
	}
	var wire struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason *string         `json:"stop_reason"`
		Usage      *model.Usage    `json:"usage"`
	}
	if err := json.Unmarshal(e.Message, &wire); err != nil {
		return m, false, fmt.Errorf("message of %s entry %s: %w", e.Type, e.UUID, err)
	}
	blocks, err := model.DecodeContent(wire.Content)
	if err != nil {
		return m, false, fmt.Errorf("message of %s entry %s: %w", e.Type, e.UUID, err)
	}
	m = APIMessage{ID: wire.ID, Role: wire.Role, Model: wire.Model, Content: blocks, Usage: wire.Usage}
	if wire.StopReason != nil {
		m.StopReason = *wire.StopReason
	}
	m.ContentIsString = len(wire.Content) > 0 && wire.Content[0] == '"'
	return m, true, nil
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

// wireEntry is the decoding shape of a line.
type wireEntry struct {
	Type                      string          `json:"type"`
	Subtype                   string          `json:"subtype"`
	UUID                      string          `json:"uuid"`
	ParentUUID                *string         `json:"parentUuid"`
	LogicalParentUUID         *string         `json:"logicalParentUuid"`
	IsSidechain               bool            `json:"isSidechain"`
	IsMeta                    bool            `json:"isMeta"`
	IsCompactSummary          bool            `json:"isCompactSummary"`
	IsVisibleInTranscriptOnly bool            `json:"isVisibleInTranscriptOnly"`
	IsAPIErrorMessage         bool            `json:"isApiErrorMessage"`
	PromptID                  string          `json:"promptId"`
	SessionID                 string          `json:"sessionId"`
	Timestamp                 string          `json:"timestamp"`
	CWD                       string          `json:"cwd"`
	Version                   string          `json:"version"`
	GitBranch                 string          `json:"gitBranch"`
	UserType                  string          `json:"userType"`
	Entrypoint                string          `json:"entrypoint"`
	Slug                      string          `json:"slug"`
	AgentID                   string          `json:"agentId"`
	PermissionMode            string          `json:"permissionMode"`
	PromptSource              string          `json:"promptSource"`
	Message                   json.RawMessage `json:"message"`
	RequestID                 string          `json:"requestId"`
	ToolUseResult             json.RawMessage `json:"toolUseResult"`
	SourceToolAssistantUUID   string          `json:"sourceToolAssistantUUID"`
	Attachment                json.RawMessage `json:"attachment"`
	Content                   json.RawMessage `json:"content"`
	Level                     string          `json:"level"`
	CompactMetadata           json.RawMessage `json:"compactMetadata"`
	SnipMetadata              json.RawMessage `json:"snipMetadata"`
	LeafUUID                  string          `json:"leafUuid"`
	LastPrompt                string          `json:"lastPrompt"`
}

// knownFields are the keys wireEntry decodes.
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
	"lastPrompt": true,
}

// DecodeEntry decodes one transcript line. The line must be a JSON object;
// its bytes are kept so unknown fields survive re-encoding.
func DecodeEntry(line []byte) (Entry, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Entry{}, fmt.Errorf("not a JSON object")
	}
	var w wireEntry
	if err := json.Unmarshal(line, &w); err != nil {
		return Entry{}, err
	}
	if w.Type == "" {
		return Entry{}, fmt.Errorf("no \"type\" field")
	}
	e := Entry{
		Type: w.Type, Subtype: w.Subtype, UUID: w.UUID,
		IsSidechain: w.IsSidechain, IsMeta: w.IsMeta,
		IsCompactSummary: w.IsCompactSummary, IsVisibleInTranscriptOnly: w.IsVisibleInTranscriptOnly,
		IsAPIErrorMessage: w.IsAPIErrorMessage,
		PromptID:          w.PromptID, SessionID: w.SessionID, Timestamp: w.Timestamp,
		CWD: w.CWD, Version: w.Version, GitBranch: w.GitBranch, UserType: w.UserType,
		Entrypoint: w.Entrypoint, Slug: w.Slug, AgentID: w.AgentID, PermissionMode: w.PermissionMode,
		PromptSource: w.PromptSource, Message: nullToNil(w.Message), RequestID: w.RequestID,
		ToolUseResult: nullToNil(w.ToolUseResult), SourceToolAssistantUUID: w.SourceToolAssistantUUID,
		Attachment: nullToNil(w.Attachment), Content: nullToNil(w.Content), Level: w.Level,
		CompactMetadata: nullToNil(w.CompactMetadata), SnipMetadata: nullToNil(w.SnipMetadata),
		LeafUUID: w.LeafUUID, LastPrompt: w.LastPrompt,
		raw: slices.Clone(line),
	}
	if e.Message != nil {
		e.cache = &msgCache{}
	}
	if w.ParentUUID != nil {
		e.ParentUUID = *w.ParentUUID
	}
	if w.LogicalParentUUID != nil {
		e.LogicalParentUUID = *w.LogicalParentUUID
	}
	return e, nil
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

// Unknown returns the fields of the line e was decoded from that Entry has
// no typed field for.
func (e *Entry) Unknown() map[string]json.RawMessage {
	if e.raw == nil {
		return nil
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(e.raw, &all) != nil {
		return nil
	}
	for k := range all {
		// encoding/json matches field names without regard to case, so a
		// key like "Type" already went into a typed field.
		if knownFields[k] || knownFolded[strings.ToLower(k)] {
			delete(all, k)
		}
	}
	return all
}

var knownFolded = func() map[string]bool {
	m := make(map[string]bool, len(knownFields))
	for k := range knownFields {
		m[strings.ToLower(k)] = true
	}
	return m
}()

// MarshalJSON encodes the entry as one transcript line (without the newline),
// keys in the order Claude Code writes them, then fields it does not know.
func (e Entry) MarshalJSON() ([]byte, error) {
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
	w.OptStr("leafUuid", e.LeafUUID)
	w.OptStr("uuid", e.UUID)
	w.OptStr("timestamp", e.Timestamp)
	w.OptStr("level", e.Level)
	w.OptRaw("compactMetadata", e.CompactMetadata)
	w.OptRaw("snipMetadata", e.SnipMetadata)
	w.OptRaw("toolUseResult", e.ToolUseResult)
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
