package openai_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/openai"
)

// A client of a local Ollama server: OPENAI_BASE_URL=http://localhost:11434/v1
// and no key.
func Example() {
	c, err := openai.New(openai.ConfigFromEnv(os.Getenv))
	if err != nil {
		fmt.Println(err) // says which variables to set
		return
	}
	req := &model.Request{
		Model:     "qwen2.5-coder:7b",
		MaxTokens: 1024,
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("Say hi.")}}},
	}
	for ch, err := range c.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ch.Kind == model.ChunkTextDelta {
			fmt.Print(ch.Text)
		}
	}
	window := openai.ContextWindow(req.Model, os.Getenv, 0)
	if _, known := openai.KnownContextWindow(req.Model); !known && os.Getenv(openai.EnvContextWindow) == "" {
		fmt.Printf("\nassuming a %d-token window; set CAIRN_CONTEXT_WINDOW to the server's\n", window)
	}
}
