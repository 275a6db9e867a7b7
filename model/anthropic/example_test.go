package anthropic_test

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
)

func ExampleClient_Stream() {
	srv := modeltest.New(modeltest.Config{})
	defer srv.Close()
	srv.Enqueue(modeltest.Text("Hello from the fake API."))

	c, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, Model: "claude-test"})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("Hi")}}}}
	for ch, err := range c.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ch.Kind {
		case model.ChunkTextDelta:
			fmt.Print(ch.Text)
		case model.ChunkDone:
			fmt.Println()
			fmt.Println(ch.Response.StopReason, ch.Response.Usage.InputTokens, "input tokens")
		}
	}
	// Output:
	// Hello from the fake API.
	// end_turn 11 input tokens
}
