package instructions

import (
	"fmt"
	"strings"
)

// header opens the instruction files as Claude Code sends them.
const header = "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."

// describe is how each kind of file is introduced, in Claude Code's words.
func describe(k Kind) string {
	switch k {
	case Project:
		return "project instructions, checked into the codebase"
	case Local:
		return "user's private project instructions, not checked in"
	}
	return "user's private global instructions for all projects"
}

// Section is one file as the model reads it.
func Section(f File) string {
	return fmt.Sprintf("Contents of %s (%s):\n\n%s", f.Path, describe(f.Kind), f.Content)
}

// Render is the claudeMd context for files: the header, then each
// file's section, in order. "" when there are none.
func Render(files []File) string {
	if len(files) == 0 {
		return ""
	}
	parts := []string{header}
	for _, f := range files {
		parts = append(parts, Section(f))
	}
	return strings.Join(parts, "\n\n")
}

// RenderUpdate tells the model which instruction files changed between
// turns: the current text of each changed file, and the files removed.
func RenderUpdate(changed []File, removed []string) string {
	var b strings.Builder
	b.WriteString("Instruction files changed since they were loaded. What follows replaces the earlier text of these files; the other instruction files still apply as loaded.")
	for _, f := range changed {
		b.WriteString("\n\n")
		b.WriteString(Section(f))
	}
	for _, p := range removed {
		fmt.Fprintf(&b, "\n\n%s was removed: the instructions it held no longer apply.", p)
	}
	return b.String()
}
