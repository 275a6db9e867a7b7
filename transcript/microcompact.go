package transcript

import (
	"encoding/json"
	"fmt"
	"time"
)

// SubtypeMicrocompactBoundary is the system line that records a
// micro-compaction: the tool results whose content it cleared.
const SubtypeMicrocompactBoundary = "microcompact_boundary"

// MicrocompactMetadata is the microcompactMetadata object of a
// microcompact_boundary line.
type MicrocompactMetadata struct {
	Trigger          string   `json:"trigger"`
	PreTokens        int64    `json:"preTokens"`
	TokensSaved      int64    `json:"tokensSaved"`
	CompactedToolIDs []string `json:"compactedToolIds"`
}

// IsMicrocompactBoundary reports whether e records a micro-compaction.
func (e *Entry) IsMicrocompactBoundary() bool {
	return e.Type == TypeSystem && e.Subtype == SubtypeMicrocompactBoundary
}

// DecodeMicrocompactMetadata decodes a microcompact_boundary's metadata,
// set by the program (Extra) or read from the file.
func (e *Entry) DecodeMicrocompactMetadata() (*MicrocompactMetadata, error) {
	return decodeField[MicrocompactMetadata](e, "microcompactMetadata")
}

// decodeField decodes the field key of a line cairn models in Extra, set
// by the program or read from the file; a missing field is T's zero value.
func decodeField[T any](e *Entry, key string) (*T, error) {
	raw := e.Extra[key]
	if raw == nil {
		raw = e.Unknown()[key]
	}
	var m T
	if len(raw) == 0 {
		return &m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", key, e.UUID, err)
	}
	return &m, nil
}

// clearedIn collects the tool_use ids the microcompact boundaries among
// entries cleared; nil when there are none.
func clearedIn(entries []*Entry, warnf func(string, ...any)) map[string]bool {
	var out map[string]bool
	for _, e := range entries {
		if !e.IsMicrocompactBoundary() {
			continue
		}
		md, err := e.DecodeMicrocompactMetadata()
		if err != nil {
			warnf("microcompact boundary %s: %v; the results it cleared are sent again", e.UUID, err)
			continue
		}
		for _, id := range md.CompactedToolIDs {
			if out == nil {
				out = make(map[string]bool)
			}
			out[id] = true
		}
	}
	return out
}

// LastAssistantTime is when the conversation's last assistant line was
// written; the zero time if it has none.
func (c *Conversation) LastAssistantTime() time.Time {
	for i := len(c.Entries) - 1; i >= 0; i-- {
		if e := c.Entries[i]; e.Type == TypeAssistant {
			return e.Time()
		}
	}
	return time.Time{}
}
