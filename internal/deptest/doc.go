// Package deptest checks the direction of imports: the library the
// engine is made of never reaches up into the command line or the
// terminal UI, so an embedding program gets the engine without them. It
// asks the go command for every package's dependencies (production code
// only, not tests) and runs under -short.
package deptest
