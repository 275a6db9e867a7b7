// Package pricing turns token usage into dollars for the models whose
// prices are published (Anthropic's pricing page, per million tokens).
// Writing to the prompt cache costs 1.25× the input price (5-minute cache),
// reading from it 0.1×. Unknown models cost 0: cairn does not guess.
package pricing

import (
	"strings"

	"github.com/cairn-dev/cairn/model"
)

// Price is a model's price per million tokens, in US dollars.
type Price struct{ Input, Output float64 }

var prices = []struct {
	match string
	price Price
}{
	{"opus-4-5", Price{5, 25}}, {"opus-4-6", Price{5, 25}}, {"opus-4-7", Price{5, 25}}, {"opus-4-8", Price{5, 25}},
	{"opus", Price{15, 75}},
	{"sonnet", Price{3, 15}},
	{"haiku-4", Price{1, 5}},
	{"haiku", Price{0.8, 4}},
}

// For returns the price of a model, and false when it is not known.
func For(modelName string) (Price, bool) {
	n := strings.ToLower(modelName)
	if !strings.Contains(n, "claude") {
		return Price{}, false
	}
	for _, p := range prices {
		if strings.Contains(n, p.match) {
			return p.price, true
		}
	}
	return Price{}, false
}

// Cost is what usage costs on a model, in US dollars.
func Cost(modelName string, u model.Usage) float64 {
	p, ok := For(modelName)
	if !ok {
		return 0
	}
	in := float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens) + 0.1*float64(u.CacheReadInputTokens)
	return (in*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
}
