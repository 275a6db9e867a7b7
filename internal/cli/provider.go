package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/pricing"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/openai"
	"github.com/cairn-dev/cairn/model/retry"
)

// DefaultAnthropicModel is used when neither --model nor ANTHROPIC_MODEL
// names one.
const DefaultAnthropicModel = "claude-sonnet-4-5"

// modelChoice is a configured model and what cairn knows of it.
type modelChoice struct {
	Model     model.Model
	Provider  string
	Name      string
	Window    tokens.Window
	MaxTokens int
	// Spent counts every response Model streams, side requests included.
	Spent *model.Tally
}

var errNoModel = errors.New("no model is configured: set ANTHROPIC_API_KEY for Anthropic's API " +
	"(or ANTHROPIC_BASE_URL for a compatible server), or OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one) " +
	"for an OpenAI-compatible server such as Ollama, vLLM, llama.cpp or OpenRouter")

// chooseModel builds the model from flags, environment and settings:
// --provider or CAIRN_PROVIDER picks the API, else whichever API's
// variables are set (Anthropic's first).
func chooseModel(env Env, provider, name string, st *settings.Settings) (*modelChoice, error) {
	if provider == "" {
		provider = env.Getenv("CAIRN_PROVIDER")
	}
	if provider == "" {
		switch {
		case env.Getenv("ANTHROPIC_API_KEY") != "" || env.Getenv("ANTHROPIC_AUTH_TOKEN") != "" || env.Getenv("ANTHROPIC_BASE_URL") != "":
			provider = "anthropic"
		case env.Getenv("OPENAI_API_KEY") != "" || env.Getenv("OPENAI_BASE_URL") != "":
			provider = "openai"
		default:
			return nil, errNoModel
		}
	}
	c := &modelChoice{Provider: provider, Name: name}
	switch provider {
	case "anthropic":
		cfg := anthropic.ConfigFromEnv(env.Getenv)
		if c.Name == "" {
			c.Name = cfg.Model
		}
		if c.Name == "" {
			c.Name = DefaultAnthropicModel
		}
		cfg.Model = c.Name
		m, err := anthropic.New(cfg)
		if err != nil {
			return nil, err
		}
		c.Model = m
	case "openai":
		if c.Name == "" {
			return nil, usagef("--model is required with an OpenAI-compatible server: name the model it serves (e.g. --model qwen2.5-coder)")
		}
		m, err := openai.New(openai.ConfigFromEnv(env.Getenv))
		if err != nil {
			return nil, err
		}
		c.Model = m
	default:
		return nil, usagef("unknown provider %q: use anthropic or openai", provider)
	}
	c.Model = retry.New(c.Model, retry.Options{OnRetry: func(attempt int, wait time.Duration, err error) {
		fmt.Fprintf(env.Stderr, "cairn: %v; retrying in %s (attempt %d of %d)\n", err, wait.Round(100*time.Millisecond), attempt+1, retry.DefaultMaxAttempts)
	}})
	c.Spent = &model.Tally{}
	c.Model = c.Spent.Wrap(c.Model)
	w, err := windowOf(env, c.Name, st)
	if err != nil {
		return nil, err
	}
	c.Window = w
	c.MaxTokens = int(min(c.Window.MaxOutput, 32_000))
	return c, nil
}

// cost is what every response so far cost, each priced as the model
// its request named.
func (c *modelChoice) cost() float64 {
	var total float64
	for name, u := range c.Spent.ByModel() {
		total += pricing.Cost(name, u)
	}
	return total
}

// windowOf is a model's context window: CAIRN_CONTEXT_WINDOW if set, else
// what cairn knows of the model, else the contextWindow setting, else a
// conservative default; CAIRN_AUTO_COMPACT_WINDOW caps the thresholds.
func windowOf(env Env, name string, st *settings.Settings) (tokens.Window, error) {
	setWindow := 0
	if st != nil {
		n, _, err := st.Int("contextWindow")
		if err != nil {
			return tokens.Window{}, err
		}
		setWindow = n
	}
	w, ok := tokens.ForModel(name)
	if !ok {
		w = tokens.Window{Size: int64(openai.ContextWindow(name, env.Getenv, setWindow)), MaxOutput: 8192}
	}
	if v := strings.TrimSpace(env.Getenv("CAIRN_CONTEXT_WINDOW")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return tokens.Window{}, fmt.Errorf("CAIRN_CONTEXT_WINDOW=%q is not a positive number of tokens", v)
		}
		w.Size = n
	}
	w.Cap = tokens.CapFromEnv(env.Getenv)
	return w, nil
}
