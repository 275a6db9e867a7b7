package memory

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Prompt is the memory section of the system prompt: how to keep the
// folder, what not to save (SPEC M2), and the index as it stands (M3).
func Prompt(dir string) string {
	index, _ := ReadIndex(dir)
	if index == "" {
		index = "(empty: no memories are saved yet)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Memory
You have a long-term memory for this project: the folder %s, which outlives this conversation. Keep it with the Write and Edit tools; you may read and write files there without asking.

## How it is kept
- One memory per file (a short file name ending in .md), starting with front matter:
  ---
  name: a short name
  description: one line saying what the memory holds, specific enough to judge later whether it bears on a task
  type: user, feedback, project or reference
  ---
  then the memory itself, then a line **Why:** with the reason behind it, and a line **How to apply:** saying when and how it should change what you do.
- %s is the index: one line per memory, such as "- [name](file.md) — what it holds". It is loaded into this prompt in every session, so keep it short: at most %d lines and %d bytes (a longer write is refused). Memory files themselves are not loaded; the ones that bear on a request are shown to you with it.
- Before writing, check whether a memory on the subject exists and update it instead of adding another. Remove memories that turn out wrong, with their index line. When the user asks you to forget something, do the same.

## Types
- user: who the user is — role, goals, what they know, how they like to work with you.
- feedback: how the user wants you to work — corrections, and approaches they confirmed.
- project: facts about the work that the code and its history do not show — goals, deadlines, decisions and their reasons, who is doing what.
- reference: where information lives outside the project — trackers, dashboards, documents, channels.

## What not to save
- Code patterns, conventions, architecture, file paths or project structure: they can be read from the code.
- Git history, recent changes, who changed what: git holds it.
- Debugging solutions or fix recipes: the fix is in the code and the reason in the commit.
- Anything the instruction files (CLAUDE.md and the like) already say.
- Ephemeral details of the task at hand: work in progress, temporary state, what this conversation is doing.
Save when the user asks you to remember something, and when you learn something about the user or the work that a future conversation would need and could not find in the project.

## %s
%s`, dir, IndexName, MaxIndexLines, MaxIndexBytes, IndexName, index)
	return b.String()
}

// CheckWrite checks a Write or Edit call that would change the index of
// the memory folder dir: it returns an error saying what to do when the
// index would break its limits, and nil for every other call.
func CheckWrite(dir, toolName string, input json.RawMessage) error {
	if toolName != "Write" && toolName != "Edit" {
		return nil
	}
	var in struct {
		Path       string `json:"file_path"`
		Content    string `json:"content"`
		Old        string `json:"old_string"`
		New        string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if json.Unmarshal(input, &in) != nil || filepath.Clean(in.Path) != filepath.Join(dir, IndexName) {
		return nil
	}
	next := in.Content
	if toolName == "Edit" {
		cur, err := os.ReadFile(in.Path)
		if err != nil || in.Old == "" {
			return nil // the Edit tool reports these itself
		}
		n := 1
		if in.ReplaceAll {
			n = -1
		}
		next = strings.Replace(string(cur), in.Old, in.New, n)
	}
	return CheckIndex(next)
}

// AllowRules are the permission rules that let the main agent read and
// write its memory folder without asking (Claude Code lets its model
// keep its memory folder in every mode); deny and ask rules still apply.
func AllowRules(dir string) []string {
	spec := "/" + escapeGlob(filepath.ToSlash(dir)) + "/**"
	return []string{"Read(" + spec + ")", "Edit(" + spec + ")"}
}

// escapeGlob escapes the characters a glob pattern gives meaning to.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Wrote reports whether a tool call wrote into the memory folder dir.
func Wrote(dir, toolName string, input json.RawMessage) bool {
	if toolName != "Write" && toolName != "Edit" {
		return false
	}
	var in struct {
		Path string `json:"file_path"`
	}
	if json.Unmarshal(input, &in) != nil || in.Path == "" {
		return false
	}
	rel, err := filepath.Rel(dir, filepath.Clean(in.Path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && rel != "."
}
