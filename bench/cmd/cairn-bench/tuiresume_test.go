package main

import (
	"slices"
	"testing"
)

// TestReady: a run is ready when the last text is on the screen, however
// spaced, with the prompt's mark on a line below it, and not before.
func TestReady(t *testing.T) {
	last := "The tests pass;"
	for _, c := range []struct {
		name, screen, prompt string
		want                 bool
	}{
		{"cairn", "● The  tests pass; the lease is gone.\n\n───\n> Try \"explain this project\"\n───", ">", true},
		{"claude, empty prompt", "● The tests pass; the lease is gone.\n───\n❯\n───\n  ⏵⏵ auto mode on", "❯", true},
		{"claude, boxed prompt", "● The tests pass; done.\n╭───╮\n│ ❯ │\n╰───╯", "❯", true},
		{"text not drawn yet", "Resuming…\n> ", ">", false},
		{"prompt only above the text", "> hi\n● The tests pass; done.\n", ">", false},
		{"a quote is not the prompt", "● The tests pass; done.\n>quoted", ">", false},
	} {
		if got := ready(c.screen, last, c.prompt); got != c.want {
			t.Errorf("%s: ready = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPlainWords: the words of a reply's first line as a terminal draws
// them, its Markdown marks gone.
func TestPlainWords(t *testing.T) {
	for text, want := range map[string][]string{
		"**Done** — the `tests` pass\nmore": {"Done", "—", "the", "tests", "pass"},
		"- first item":                      {"first", "item"},
		"12. twelfth item":                  {"twelfth", "item"},
		"3) third":                          {"third"},
		". not a marker":                    {".", "not", "a", "marker"},
		"## Heading _here_":                 {"Heading", "here"},
	} {
		if got := plainWords(text); !slices.Equal(got, want) {
			t.Errorf("plainWords(%q) = %q, want %q", text, got, want)
		}
	}
}
