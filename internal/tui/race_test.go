//go:build race

package tui_test

func init() { raceEnabled = true }
