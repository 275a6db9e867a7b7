// Command cairn is a coding agent: see the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cairn-dev/cairn/internal/cli"
	"github.com/cairn-dev/cairn/internal/sandbox"
)

func main() {
	// Inside the sandbox, with hosts allowed, cairn's binary is the
	// network bridge before the command.
	sandbox.MaybeBridge()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
