package transcript

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// WrapSystemReminder wraps text the way Claude Code marks context the
// harness adds to a user turn.
func WrapSystemReminder(s string) string {
	return "<system-reminder>\n" + s + "\n</system-reminder>"
}

// SkillListingIntro begins the reminder a skill_listing attachment of
// Claude Code's is rendered as when its transcript line has no rendered
// text.
const SkillListingIntro = "The following skills are available for use with the Skill tool:"

// AttachmentType returns the type of an attachment entry's attachment:
// what encoding/json decodes into a string field "type" (the key matched
// without regard to case, the last of repeated keys counting, null
// leaving it as it was), "" when there is none or it is not a string. It reads the type alone, so a scan
// for one kind of attachment passes over the others without decoding
// them.
func (e *Entry) AttachmentType() string {
	members := jsonscan.Members
	if within(e.Attachment, e.bodyBytes()) {
		members = jsonscan.TrustedMembers // checked with its line
	}
	var typ []byte
	err := members(e.Attachment, func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return err
		}
		if foldIs(k, "type") && !jsonscan.IsNull(val) {
			typ = val
		}
		return nil
	})
	if err != nil || len(typ) == 0 || typ[0] != '"' {
		return ""
	}
	s, err := jsonscan.Unquote(typ, jsonscan.StringFlags(typ))
	if err != nil {
		return ""
	}
	return s
}

// renderAttachment returns the text blocks an attachment entry was sent as.
// Newer transcripts record them (rendered); for older ones they are rebuilt
// from the attachment the way Claude Code renders each type. Types that
// render to nothing return nil.
func renderAttachment(e *Entry) ([]model.Block, error) {
	if rendered, ok := e.unknownMember("rendered"); ok {
		var parts []struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(rendered, &parts); err != nil {
			return nil, fmt.Errorf("attachment %s: rendered: %w", e.UUID, err)
		}
		var out []model.Block
		for _, p := range parts {
			blocks, err := model.DecodeContent(p.Content)
			if err != nil {
				return nil, fmt.Errorf("attachment %s: rendered: %w", e.UUID, err)
			}
			out = append(out, blocks...)
		}
		return out, nil
	}
	var a attachment
	if err := json.Unmarshal(e.Attachment, &a); err != nil {
		return nil, fmt.Errorf("attachment %s: %w", e.UUID, err)
	}
	texts := a.render()
	out := make([]model.Block, len(texts))
	for i, t := range texts {
		out[i] = model.TextBlock(WrapSystemReminder(t))
	}
	return out, nil
}

// attachment is the union of the attachment shapes cairn renders.
type attachment struct {
	Type string `json:"type"`

	// file
	Filename  string          `json:"filename"`
	Content   json.RawMessage `json:"content"`
	Truncated bool            `json:"truncated"`

	// agent_listing_delta
	AddedLines          []string `json:"addedLines"`
	RemovedTypes        []string `json:"removedTypes"`
	IsInitial           bool     `json:"isInitial"`
	ShowConcurrencyNote bool     `json:"showConcurrencyNote"`

	// plan_file_reference
	PlanFilePath string `json:"planFilePath"`
	PlanContent  string `json:"planContent"`

	// edited_text_file
	Snippet string `json:"snippet"`

	// hooks
	HookName string `json:"hookName"`
}

func (a *attachment) contentString() string {
	var s string
	if json.Unmarshal(a.Content, &s) == nil {
		return s
	}
	return ""
}

func (a *attachment) render() []string {
	switch a.Type {
	case "file", "new_file":
		return a.renderFile()
	case "skill_listing":
		if c := a.contentString(); c != "" {
			return []string{SkillListingIntro + "\n\n" + c}
		}
	case "agent_listing_delta":
		var parts []string
		if len(a.AddedLines) > 0 {
			header := "New agent types are now available for the Agent tool:"
			if a.IsInitial {
				header = "Available agent types for the Agent tool:"
			}
			parts = append(parts, header+"\n"+strings.Join(a.AddedLines, "\n"))
		}
		if len(a.RemovedTypes) > 0 {
			var b strings.Builder
			b.WriteString("The following agent types are no longer available:")
			for _, t := range a.RemovedTypes {
				b.WriteString("\n- " + t)
			}
			parts = append(parts, b.String())
		}
		if a.IsInitial && a.ShowConcurrencyNote {
			parts = append(parts, "Launch multiple agents concurrently whenever possible, to maximize performance; to do that, use a single message with multiple tool uses.")
		}
		if len(parts) > 0 {
			return []string{strings.Join(parts, "\n\n")}
		}
	case "compact_file_reference":
		return []string{"Note: " + a.Filename + " was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it."}
	case "plan_file_reference":
		return []string{PlanReferenceText(a.PlanFilePath, a.PlanContent)}
	case "edited_text_file":
		return []string{"Note: " + a.Filename + " was modified, either by the user or by a linter. This change was intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes (shown with line numbers):\n" + a.Snippet}
	case "critical_system_reminder":
		if c := a.contentString(); c != "" {
			return []string{c}
		}
	case "nested_memory":
		var c struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal(a.Content, &c) == nil && c.Path != "" {
			return []string{"Contents of " + c.Path + ":\n\n" + c.Content}
		}
	case "hook_additional_context":
		var lines []string
		if json.Unmarshal(a.Content, &lines) == nil && len(lines) > 0 {
			return []string{a.HookName + " hook additional context: " + strings.Join(lines, "\n")}
		}
	case "hook_success":
		if c := a.contentString(); c != "" {
			return []string{a.HookName + " hook success: " + c}
		}
	}
	return nil
}

// PlanReferenceText is what a plan_file_reference attachment shows the
// model (inside a system reminder): the plan carried through a
// compaction, and where its file is.
func PlanReferenceText(path, content string) string {
	return "A plan file exists from plan mode at: " + path + "\n\nPlan contents:\n\n" + content + "\n\nIf this plan is relevant to the current work and not already complete, continue working on it."
}

// renderFile renders a file re-read after compaction as a Read call and its
// result, the way the model would have seen the tool run.
func (a *attachment) renderFile() []string {
	var c struct {
		Type string `json:"type"`
		File struct {
			FilePath  string `json:"filePath"`
			Content   string `json:"content"`
			StartLine int    `json:"startLine"`
		} `json:"file"`
	}
	if json.Unmarshal(a.Content, &c) != nil || c.Type != "text" {
		return nil
	}
	call := "Called the Read tool with the following input: "
	input, _ := jsonw.Marshal(map[string]string{"file_path": a.Filename})
	call += string(input)
	out := []string{call, "Result of calling the Read tool:\n" + NumberLines(c.File.Content, c.File.StartLine)}
	if a.Truncated {
		out = append(out, "Note: The file "+a.Filename+" was too large and has been truncated. Don't tell the user about this truncation. Use Read to read more of the file if you need.")
	}
	return out
}

// NumberLines renders file content as the Read tool returns it: each line
// prefixed with its number and a tab, counting from start (1 if zero).
func NumberLines(content string, start int) string {
	if start <= 0 {
		start = 1
	}
	lines := strings.Split(content, "\n")
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(start + i))
		b.WriteByte('\t')
		b.WriteString(line)
	}
	return b.String()
}
