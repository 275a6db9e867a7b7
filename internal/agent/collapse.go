package agent

import (
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/transcript"
)

// collapseConfig completes the session's context collapse configuration:
// it folds with the session's model unless told otherwise, records its
// commits in the session's transcript, never folds pins, and a resumed
// session folds what its transcript records as folded.
func (a *Agent) collapseConfig(cfg compact.CollapseConfig, conv *transcript.Conversation) compact.CollapseConfig {
	if cfg.Model == nil {
		cfg.Model, cfg.ModelName = a.opts.Model, a.opts.ModelName
	}
	cfg.Transcript, cfg.Pins = transcriptOf{a}, a.pins
	if conv != nil {
		cfg.Collapsed = conv.Collapsed
	}
	return cfg
}
