package openai

import (
	"strconv"
	"strings"
)

// EnvContextWindow overrides the context window of any model.
const EnvContextWindow = "CAIRN_CONTEXT_WINDOW"

// DefaultContextWindow is the window assumed for a model cairn does not
// know. It is small on purpose: compacting too early costs little, while
// overflowing a server that truncates silently (Ollama does) loses the
// start of the conversation without an error.
const DefaultContextWindow = 32768

// ContextWindow returns the context window, in tokens, of the named model:
// CAIRN_CONTEXT_WINDOW (read through getenv) when it is a positive number,
// else setting (the contextWindow setting) when positive, else the
// published window of a well-known model (KnownContextWindow), else
// DefaultContextWindow.
//
// When the result is the default — KnownContextWindow reports false and
// neither override is set — the caller should tell the user once that the
// window is a guess and how to fix it, e.g. "cairn does not know the
// context window of model "my-model"; assuming 32768 tokens. Set
// CAIRN_CONTEXT_WINDOW or "contextWindow" in settings.json to the window
// your server runs with." For a local server the served window can be
// smaller than the model's (Ollama's num_ctx, llama.cpp's --ctx-size), so
// the same hint applies when compaction seems late.
func ContextWindow(model string, getenv func(string) string, setting int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(EnvContextWindow))); err == nil && n > 0 {
		return n
	}
	if setting > 0 {
		return setting
	}
	if n, ok := KnownContextWindow(model); ok {
		return n
	}
	return DefaultContextWindow
}

// KnownContextWindow returns the published context window of a well-known
// model, and false for a model not in the table. Names match by longest
// prefix after dropping a provider prefix ("openai/gpt-4o" on OpenRouter)
// and an Ollama tag ("llama3.1:8b"), case-insensitively.
func KnownContextWindow(model string) (int, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	best, window := -1, 0
	for _, w := range knownWindows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			// A prefix must end at a word boundary: "o3" matches "o3-mini"
			// but not "o30".
			if rest := name[len(w.prefix):]; rest != "" && !strings.ContainsRune("-._ ", rune(rest[0])) {
				continue
			}
			best, window = len(w.prefix), w.tokens
		}
	}
	return window, best >= 0
}

// knownWindows are context windows from the models' published model cards
// (OpenAI's model pages; Meta, Alibaba Qwen, Mistral and Google model cards
// as listed in the Ollama library). A longer prefix wins.
var knownWindows = []struct {
	prefix string
	tokens int
}{
	// OpenAI
	{"gpt-5", 400000},
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-4", 8192},
	{"gpt-4-32k", 32768},
	{"gpt-3.5-turbo", 16385},
	{"o1", 200000},
	{"o1-mini", 128000},
	{"o1-preview", 128000},
	{"o3", 200000},
	{"o3-mini", 200000},
	{"o4-mini", 200000},
	// Meta Llama
	{"llama3", 8192},
	{"llama3.1", 131072},
	{"llama3.2", 131072},
	{"llama3.3", 131072},
	{"codellama", 16384},
	// Alibaba Qwen
	{"qwen2.5", 32768},
	{"qwen2.5-coder", 32768},
	// Mistral
	{"mistral", 32768},
	{"mixtral", 32768},
	// Google Gemma
	{"gemma2", 8192},
}
