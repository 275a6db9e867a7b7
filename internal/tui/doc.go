// Package tui is cairn's interactive terminal UI: the program most people
// meet, built on bubbletea's Elm architecture (one Model, Update, View).
//
// It is a second consumer of the engine's event stream, beside the
// headless printer: a turn runs in a goroutine that feeds the events of
// agent.Run to Update one message at a time, so every change to the
// screen is made by Update on the program's goroutine. The UI reaches
// the session only through the small [Session] interface, and the rest
// of cairn (the permission gate, the context report, the session
// picker's reopening) through [Options]; nothing in cairn's library
// packages imports this one.
//
// The transcript is virtualised: each message renders once per width
// and is cached, and a frame renders only the messages it shows, so a
// session of thousands of messages scrolls as fast as a new one.
package tui
