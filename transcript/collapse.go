package transcript

// SubtypeCollapseCommit is the system line that records a context
// collapse commit: spans of the conversation that requests from then on
// carry folded into short summaries, while the transcript keeps every
// line of them.
const SubtypeCollapseCommit = "context_collapse_commit"

// CollapseSpan is one folded span: the messages from the one holding
// FromUUID through the one holding ToUUID, sent as Summary.
type CollapseSpan struct {
	FromUUID string `json:"fromUuid"`
	ToUUID   string `json:"toUuid"`
	Summary  string `json:"summary"`
}

// CollapseMetadata is the collapseMetadata object of a
// context_collapse_commit line.
type CollapseMetadata struct {
	// Trigger is "staged" (folds summarised in the background) or
	// "blocking" (the context was near the window and the commit waited).
	Trigger     string         `json:"trigger"`
	PreTokens   int64          `json:"preTokens"`
	TokensSaved int64          `json:"tokensSaved"`
	Spans       []CollapseSpan `json:"spans"`
}

// IsCollapseCommit reports whether e records a context collapse commit.
func (e *Entry) IsCollapseCommit() bool {
	return e.Type == TypeSystem && e.Subtype == SubtypeCollapseCommit
}

// DecodeCollapseMetadata decodes a context_collapse_commit's metadata,
// set by the program (Extra) or read from the file.
func (e *Entry) DecodeCollapseMetadata() (*CollapseMetadata, error) {
	return decodeField[CollapseMetadata](e, "collapseMetadata")
}

// collapsedIn collects the spans the collapse commits among entries
// folded, in commit order; nil when there are none. A span without both
// ends or a summary is left out with a warning.
func collapsedIn(entries []*Entry, warnf func(string, ...any)) []CollapseSpan {
	var out []CollapseSpan
	for _, e := range entries {
		if !e.IsCollapseCommit() {
			continue
		}
		md, err := e.DecodeCollapseMetadata()
		if err != nil {
			warnf("context collapse commit %s: %v; the spans it folded are sent whole", e.UUID, err)
			continue
		}
		for _, s := range md.Spans {
			if s.FromUUID == "" || s.ToUUID == "" || s.Summary == "" {
				warnf("context collapse commit %s: a span without its ends or summary; it is sent whole", e.UUID)
				continue
			}
			out = append(out, s)
		}
	}
	return out
}
